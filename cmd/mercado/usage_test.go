package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"net"
	"strings"
	"testing"
)

// TestBadUsageIsOneLine: a mistake on the command line is answered by one
// line that names the flag (or the method) at fault and what it wants,
// with exit status 2; the usage is not dumped after it.
func TestBadUsageIsOneLine(t *testing.T) {
	const catalogMethods = "(want ListProducts, GetProduct, ReserveStock, ReleaseStock, ExportCatalog, Commit or *)"
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string // all that is printed
	}{
		{"a duration without its unit", []string{"lab", "lesson7", "--deadline", "-5"}, nil,
			`mercado: lab lesson7: --deadline "-5": want a duration such as 800ms or 2s`},
		{"a bad number for a service", []string{"serve", "catalog", "--workers", "x"}, nil,
			`mercado: serve catalog: --workers "x": want a whole number`},
		{"a bad variable", []string{"lab", "waterfall"}, map[string]string{"MERCADO_BUDGET": "soon"},
			`mercado: lab waterfall: MERCADO_BUDGET="soon": want a duration such as 800ms or 2s`},
		{"an unknown flag", []string{"lab", "lesson7", "--nope"}, nil,
			`mercado: lab lesson7: flag provided but not defined: -nope (--help lists the flags)`},
		{"an unknown fault method at start-up", []string{"serve", "catalog", "--fault", "NoSuchMethod:latency=1s"}, nil,
			`mercado: serve catalog: --fault: unknown method "NoSuchMethod" for catalog ` + catalogMethods},
		{"a fault method in the wrong case", []string{"serve", "catalog", "--fault", "reservestock:latency=1s"}, nil,
			`mercado: serve catalog: --fault: unknown method "reservestock" for catalog: names are case-sensitive, did you mean ReserveStock? ` + catalogMethods},
		{"another service's method", []string{"serve", "payments", "--fault", "CreateShipment:hang"}, nil,
			`mercado: serve payments: --fault: unknown method "CreateShipment" for payments (want CreateCharge, ScreenOrder, RecordAudit or *)`},
		{"an unknown fault method in serve all", []string{"serve", "all", "--catalog-fault", "NoSuchMethod:latency=1s"}, nil,
			`mercado: serve all: --catalog-fault: unknown method "NoSuchMethod" for catalog ` + catalogMethods},
		{"an unknown fault method from the environment", []string{"serve", "shipping"}, map[string]string{"MERCADO_FAULT": "createshipment:hang"},
			`mercado: serve shipping: --fault: unknown method "createshipment" for shipping: names are case-sensitive, did you mean CreateShipment? (want CreateShipment, EstimateDelivery or *)`},
		{"mercado fault with an unknown method", []string{"fault", "catalog", "--method", "NoSuchMethod", "--latency", "1s"}, nil,
			`mercado: fault catalog: --method: unknown method "NoSuchMethod" for catalog ` + catalogMethods},
		{"mercado fault in the wrong case", []string{"fault", "catalog", "--method", "reservestock", "--clear"}, nil,
			`mercado: fault catalog: --method: unknown method "reservestock" for catalog: names are case-sensitive, did you mean ReserveStock? ` + catalogMethods},
		{"mercado fault without a service", []string{"fault", "--latency", "1s"}, nil,
			`mercado: fault: name a service: gateway, orders, catalog, payments or shipping (--help lists the flags)`},
		{"mercado fault with a bad value", []string{"fault", "shipping", "--hang", "long"}, nil,
			`mercado: fault shipping: --hang "long": want a duration such as 800ms or 2s`},
		{"mercado mode with a bad flag", []string{"mode", "naive", "--mechanisms", "breakers=maybe"}, nil, ""},
		{"a lab's name misspelt", []string{"lab", "lesson-7"}, nil,
			`mercado: lab: unknown lab "lesson-7": did you mean lesson7? (mercado lab --help lists them)`},
		{"a scenario's name misspelt", []string{"lab", "drill-76"}, nil,
			`mercado: lab: unknown lab "drill-76": did you mean drill76? (mercado lab --help lists them)`},
		{"a scenario's name misspelt after lab scenario", []string{"lab", "scenario", "Payments_Flaky"}, nil,
			`mercado: lab: unknown scenario "Payments_Flaky": did you mean payments-flaky? (mercado lab --help lists them)`},
		{"mercado load with the scenario named twice", []string{"load", "--quick", "flash-sale", "--scenario", "drill76"}, nil,
			`mercado: load: the scenario is named twice, flash-sale and --scenario drill76; give it once`},
		{"mercado load with two scenarios", []string{"load", "--quick", "flash-sale", "drill76"}, nil,
			`mercado: load: unexpected argument "drill76"`},
		{"a scale out of bounds", []string{"lab", "drill76", "--scale", "20"}, nil,
			`mercado: lab: scale 20 is outside 0.05 to 10`},
		{"a name nothing is near", []string{"lab", "zebra"}, nil,
			`mercado: lab: unknown lab "zebra" (mercado lab --help lists them)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(context.Background(), tc.args, env(tc.env), io.Discard, &out)
			if code := exitCode(err, &out); code != 2 {
				t.Errorf("exit code %d, want 2 (err: %v)", code, err)
			}
			got := strings.TrimSuffix(out.String(), "\n")
			if strings.Contains(got, "\n") {
				t.Errorf("printed several lines:\n%s", out.String())
			}
			if tc.want != "" && got != tc.want {
				t.Errorf("printed\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// `mercado fault --help` lists the flags and each service's methods
// without a service named, and succeeds.
func TestFaultHelpNeedsNoService(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"fault", "--help"}, env(nil), io.Discard, &out); err != nil {
		t.Fatalf("fault --help: %v", err)
	}
	for _, want := range []string{"-method string", "-latency duration", "-clear", "-admin string",
		"catalog   ListProducts, GetProduct, ReserveStock, ReleaseStock, ExportCatalog", "shipping  CreateShipment"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("fault --help does not show %q:\n%s", want, out.String())
		}
	}
}

// With no shop running, mercado mode and mercado fault say how to start
// one (exit 1: the command was right, the shop is missing).
func TestNoShopSaysHowToStartOne(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"mode", "--admin", closed},
			"mercado: mode: no shop answers at " + closed + ": start one with `go run ./cmd/mercado serve all`"},
		{[]string{"mode", "naive", "--admin", closed},
			"mercado: mode: no shop answers at " + closed + ": start one with `go run ./cmd/mercado serve all`"},
		{[]string{"fault", "catalog", "--admin", closed},
			"mercado: fault catalog: nothing answers at " + closed + ": start the shop with `go run ./cmd/mercado serve all`, or this service with `go run ./cmd/mercado serve catalog`"},
	} {
		t.Run(strings.Join(tc.args[:2], " "), func(t *testing.T) {
			var out bytes.Buffer
			err := run(context.Background(), tc.args, env(nil), io.Discard, &out)
			if code := exitCode(err, &out); code != 1 {
				t.Errorf("exit code %d, want 1", code)
			}
			if got := strings.TrimSuffix(out.String(), "\n"); got != tc.want {
				t.Errorf("printed\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// `mercado --help` names every lab and what a lab's exit status says;
// `mercado lab --help` describes every lab with the flags of the one run
// with no name (a scenario's), and `mercado lab NAME --help` that lab's
// alone: no flag another lab takes and this one refuses.
func TestHelpListsEveryLabAndItsOwnFlags(t *testing.T) {
	help := func(args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		if err := run(context.Background(), args, env(nil), &stdout, &stderr); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		return stdout.String() + stderr.String()
	}
	labs := []string{"lesson7", "fanout", "waterfall", "isolation", "capstone", "console", "capacity"}
	top := help("--help")
	for _, want := range append(labs, "3  a check failed", "4  a run was INVALID") {
		if !strings.Contains(top, want) {
			t.Errorf("mercado --help lacks %q:\n%s", want, top)
		}
	}
	overview := help("lab", "--help")
	for _, want := range append(labs, "drill76", "4  a run was INVALID", "-quick", "-out") {
		if !strings.Contains(overview, want) {
			t.Errorf("mercado lab --help lacks %q:\n%s", want, overview)
		}
	}
	for _, tc := range []struct {
		lab        string
		has, lacks []string
	}{
		{"capstone", []string{"-report", "-quick", "3  a check failed"}, []string{"-out"}},
		{"lesson7", []string{"-out", "-deadline", "4  a run was INVALID"}, []string{"-quick", "-report"}},
		{"capacity", []string{"-database-url", "-idle-times", "-popularity"}, []string{"-out", "Exit status"}},
		{"drift", []string{"-quick", "-out", "The drift scenario:", "-database-url", "-db-max-conns"}, []string{"-report", "-deadline"}},
	} {
		got := help("lab", tc.lab, "--help")
		flags := got[strings.Index(got, "Flags:"):]
		for _, want := range tc.has {
			if !strings.Contains(got, want) {
				t.Errorf("mercado lab %s --help lacks %q:\n%s", tc.lab, want, got)
			}
		}
		for _, unwanted := range tc.lacks {
			if strings.Contains(flags, "  "+unwanted+" ") || strings.Contains(flags, "  "+unwanted+"\n") || strings.Contains(got, unwanted) && !strings.HasPrefix(unwanted, "-") {
				t.Errorf("mercado lab %s --help lists %q, which it does not take:\n%s", tc.lab, unwanted, got)
			}
		}
	}
}

// A command that takes one argument besides its flags finds it before the
// flags, after them or between them, as compose's lab service passes it.
func TestParseCommandArgFindsTheArgumentAnywhere(t *testing.T) {
	for _, args := range [][]string{
		{"flash-sale", "--quick", "--out", "r"},
		{"--quick", "--out", "r", "flash-sale"},
		{"--out", "r", "flash-sale", "--quick"},
	} {
		fs := flag.NewFlagSet("mercado load", flag.ContinueOnError)
		quick, out := fs.Bool("quick", false, ""), fs.String("out", "", "")
		arg, help, err := parseCommandArg(fs, args, func(string) string { return "" })
		if arg != "flash-sale" || help || err != nil || !*quick || *out != "r" {
			t.Errorf("%q: argument %q, help %v, err %v, --quick %v, --out %q; want flash-sale and both flags", args, arg, help, err, *quick, *out)
		}
	}
}
