package budget

import (
	"encoding/json"
	"fmt"

	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/encoding/protojson"
)

// A shop's hop readings travel as JSON from one process to another (the
// capstone's load generator reads them for the lab). A hop histogram ends
// with its +Inf bucket, which encoding/json cannot write, so the
// histogram goes in protobuf's own JSON mapping, which writes it as
// "Infinity"; every other field is encoded as encoding/json would.

// hopFields are a HopObservation's fields without its JSON methods.
type hopFields HopObservation

// MarshalJSON writes o with its histogram in protobuf's JSON mapping.
func (o HopObservation) MarshalJSON() ([]byte, error) {
	out := struct {
		hopFields
		// Durations shadows the embedded field of the same name.
		Durations json.RawMessage `json:",omitempty"`
	}{hopFields: hopFields(o)}
	if o.Durations != nil {
		b, err := protojson.Marshal(o.Durations)
		if err != nil {
			return nil, fmt.Errorf("%s → %s: its hop histogram: %w", o.From, o.To, err)
		}
		out.Durations = b
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (o *HopObservation) UnmarshalJSON(b []byte) error {
	var in struct {
		hopFields
		Durations json.RawMessage
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*o = HopObservation(in.hopFields)
	if len(in.Durations) > 0 && string(in.Durations) != "null" {
		h := &dto.Histogram{}
		if err := protojson.Unmarshal(in.Durations, h); err != nil {
			return fmt.Errorf("%s → %s: its hop histogram: %w", o.From, o.To, err)
		}
		o.Durations = h
	}
	return nil
}
