package gateway

import (
	"net/http"
	"time"

	"github.com/mercado-lab/mercado/internal/timing"
)

// serverTiming gives each request a hop record and writes it as the
// Server-Timing header just before the response's header goes out: the
// gateway's own calls, then the hops orders reported back, then the
// gateway's total.
func (s *server) serverTiming(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ctx, rec := timing.WithRecorder(r.Context())
		tw := &timingWriter{ResponseWriter: w, write: func(h http.Header) {
			hops := append(rec.Hops(), timing.Hop{Name: "total", Took: time.Since(start)})
			h.Set("Server-Timing", timing.Format(hops))
		}}
		next.ServeHTTP(tw, r.WithContext(ctx))
	})
}

// timingWriter runs write once, right before the header is sent.
type timingWriter struct {
	http.ResponseWriter
	write   func(http.Header)
	written bool
}

func (t *timingWriter) WriteHeader(code int) {
	if !t.written {
		t.written = true
		t.write(t.Header())
	}
	t.ResponseWriter.WriteHeader(code)
}

func (t *timingWriter) Write(b []byte) (int, error) {
	if !t.written {
		t.WriteHeader(http.StatusOK)
	}
	return t.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (t *timingWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }
