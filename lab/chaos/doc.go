// Package chaos holds Mercado's end-to-end reliability tests: the shop run
// as five separate processes of the real binary on one PostgreSQL
// database, with services killed (SIGKILL) and restarted, the database cut
// off, payments timing out, shipping hung and the network slow, all while
// a retrying client sends checkouts; each run ends by checking the
// invariants against the stores (docs/reliability.md). The soak test runs
// the in-process shop under open-loop load and checks that memory,
// goroutines, connections and file descriptors stay bounded.
//
// The package has no code outside its tests.
package chaos
