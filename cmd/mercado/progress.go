package main

import (
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress shows a lab's run on the terminal: one bar per mode, in
// seconds of load sent.
type progress struct {
	w    io.Writer
	mode string
	bar  *progressbar.ProgressBar
}

func newProgress(w io.Writer) *progress { return &progress{w: w} }

func (p *progress) update(mode string, done, total time.Duration) {
	if mode != p.mode {
		p.finish()
		p.mode = mode
		p.bar = progressbar.NewOptions(int(total.Seconds()),
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionSetDescription(mode+" "),
			progressbar.OptionSetWidth(30),
			progressbar.OptionShowCount(),
			progressbar.OptionSetItsString("s"),
			progressbar.OptionThrottle(200*time.Millisecond),
		)
	}
	_ = p.bar.Set(int(done.Seconds()))
}

func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
		_, _ = io.WriteString(p.w, "\n")
		p.bar = nil
	}
}
