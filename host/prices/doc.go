// Package prices is the daemon's model price table: per-million-token list
// prices of the models it can cost, embedded from prices.json with the date
// they were taken, and the sum that turns a run's tokens into its cost when
// the backend did not report one. A model missing from the table is "cost
// unknown", never a guess.
//
// It imports only the store (the usage it fills in) and sdk/backend (the
// tokens a backend reports); the run supervisor costs each
// run with it.
package prices
