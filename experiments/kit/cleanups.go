package kit

import "regexp"

// Cleanups stop whatever is still running when a run of the harness returns
// (also after an interruption), the last added first; each is safe to call
// after the plan stopped what it stops.
type Cleanups []func()

// Add adds f to run before every cleanup added so far.
func (c *Cleanups) Add(f func()) { *c = append(*c, f) }

// AddFirst adds f to run after every other cleanup.
func (c *Cleanups) AddFirst(f func()) { *c = append([]func(){f}, *c...) }

// Run runs the cleanups, the last added first, and forgets them.
func (c *Cleanups) Run() {
	for i := len(*c) - 1; i >= 0; i-- {
		(*c)[i]()
	}
	*c = nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9.=-]+`)

// SafeName is s with every run of characters unsafe in a file name replaced
// by "_".
func SafeName(s string) string { return unsafeName.ReplaceAllString(s, "_") }
