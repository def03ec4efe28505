// Package driver drives a running shop through its services' admin APIs:
// it switches the whole shop between modes, puts faults in force, reads
// every service's /metrics and waits for their pools to empty. The load
// test's scenario runner drives the shop through it (it is a
// loadtest.Target), so the load generator itself knows nothing of the admin
// API; the labs use it to arrange a run.
package driver
