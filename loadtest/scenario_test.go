package loadtest

import (
	"strings"
	"testing"
)

// A phase's faults name methods the service simulates, spelt as the
// service spells them; anything else is refused with the valid names.
func TestScenarioFaultMethodsAreValidated(t *testing.T) {
	base := `name: x
deadline: 1s
classes: {checkout: {rate: 10}}
phases:
  - name: slow
    duration: 1s
    faults: {%s}
`
	for faults, want := range map[string]string{
		`shipping: "CreateShipment:hang=5s"`: "",
		`catalog: "latency=5ms"`:             "",
		`shipping: "NoSuchMethod:hang=5s"`:   `phase slow: shipping: unknown method "NoSuchMethod" for shipping (want CreateShipment, EstimateDelivery or *)`,
		`catalog: "reservestock:latency=1s"`: `did you mean ReserveStock?`,
		`payments: "CreateShipment:hang"`:    `unknown method "CreateShipment" for payments (want CreateCharge, ScreenOrder, RecordAudit or *)`,
		`inventory: "latency=1s"`:            `phase slow: unknown service "inventory"`,
	} {
		_, err := ParseScenario([]byte(strings.Replace(base, "%s", faults, 1)))
		switch {
		case want == "" && err != nil:
			t.Errorf("%s: %v", faults, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%s: got %v, want an error containing %q", faults, err, want)
		}
	}
}
