// Package postgres is Mercado's PostgreSQL plumbing, shared by the stores of
// the services that keep state (catalog, payments, shipping, orders):
//
//   - [Open] opens a connection pool that fails fast when the database
//     cannot be reached: a short connect timeout, and a first ping before
//     the pool is handed out;
//   - [Migrate] brings one service's schema up to date with goose, under a
//     PostgreSQL advisory lock, so that replicas starting at once are safe;
//   - [InTx] runs a transaction whose statements are bounded by the
//     request's budget, on the server as well as in the driver;
//   - [Error] maps the driver's errors to Mercado's coded errors, so an
//     unreachable database is Unavailable (503 at the edge), never a hang
//     and never a bare 500;
//   - [Ready] is the readiness check behind /readyz.
//
// One database holds one schema per service; each schema has its own goose
// version table (<schema>.goose_db_version), so services migrate apart.
//
// # How the budget bounds a query
//
// Every query takes the request's ctx. pgx watches it: when the ctx ends
// mid-statement, pgx sends PostgreSQL a cancel request and returns the
// ctx's error, which [Error] maps to Timeout. A single statement relies on
// that alone. A transaction ([InTx]) also sets statement_timeout to what
// is left of the budget (SET LOCAL, so it dies with the transaction): the
// server then stops the work by itself even if the cancel request is lost
// on the way, and never holds row locks past the client's deadline.
//
// Like every library in Mercado, this package never logs.
package postgres
