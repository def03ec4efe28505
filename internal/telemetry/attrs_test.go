package telemetry

import (
	"strconv"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

func TestAttrCacheIsBounded(t *testing.T) {
	c := newAttrCache(oneLabel(labelMethod))
	for i := range maxCachedLabelValues + 10 {
		v := strconv.Itoa(i)
		o := c.get(v)
		// Past the bound the options are still right, just not cached.
		set := metric.NewAddConfig(o.add).Attributes()
		if got, _ := set.Value(attribute.Key(labelMethod)); got.AsString() != v || set.Len() != 1 {
			t.Fatalf("get(%q) attributes = %v", v, set.ToSlice())
		}
	}
	if n := len(*c.m.Load()); n != maxCachedLabelValues {
		t.Errorf("cache holds %d entries; want the bound %d", n, maxCachedLabelValues)
	}
}
