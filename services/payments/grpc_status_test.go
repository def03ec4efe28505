package payments

import (
	"testing"

	paymentsv1 "github.com/mercado-lab/mercado/proto/payments/v1"
)

// Every charge status has its own value on the wire, and every value the
// contract defines but the unspecified one is some charge's status.
func TestStatusToProto(t *testing.T) {
	seen := map[paymentsv1.ChargeStatus]Status{}
	for _, s := range []Status{StatusPending, StatusSucceeded, StatusFailed} {
		p := statusToProto(s)
		if p == paymentsv1.ChargeStatus_CHARGE_STATUS_UNSPECIFIED {
			t.Errorf("%q has no wire value", s)
		}
		if other, dup := seen[p]; dup {
			t.Errorf("%q and %q both map to %v", s, other, p)
		}
		seen[p] = s
	}
	for v := range paymentsv1.ChargeStatus_name {
		if p := paymentsv1.ChargeStatus(v); p != paymentsv1.ChargeStatus_CHARGE_STATUS_UNSPECIFIED && seen[p] == "" {
			t.Errorf("wire value %v is no charge's status", p)
		}
	}
	if p := statusToProto("refunded"); p != paymentsv1.ChargeStatus_CHARGE_STATUS_UNSPECIFIED {
		t.Errorf("an unknown status maps to %v, want unspecified", p)
	}
}
