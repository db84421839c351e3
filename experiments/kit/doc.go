// Package kit starts, watches, measures and stops the servers of the
// experiments, the fault suite and the pipeline: one process handle (Proc:
// start in a group of its own, wait until ready with WaitFor, stop
// gracefully or kill, its log), one ZooKeeper launcher (ZooKeeper, standalone
// or a member of an Ensemble, from Debian's package), the hosts processes
// run on (this machine, or a host of the emulated testbed), and the
// runtimes that run the systems under test as processes or in containers,
// with what measures them (/proc, cgroups, the testbed's link).
//
// The harness owns every process it starts: none is tied to a context that
// may be cancelled; each is stopped by Stop, Kill or a cleanup (Cleanups).
package kit
