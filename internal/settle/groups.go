package settle

// Groups keeps the messages of FIFO message groups in order, for both
// runtimes: one message of a group is active (running or settling) at a
// time, the others wait in the order they were received. When the active
// message is settled, the next one becomes active only if the settlement
// lets the group go on (the worker: Final.GroupGoesOn; the Lambda adapter:
// the record succeeded); otherwise the rest of the group is handed back,
// in order, to be released unrun, so no later message of a group can
// overtake an earlier one. Its zero value is ready; it is not safe for
// concurrent use (the runtime guards it).
type Groups[T comparable] struct {
	m map[string]*group[T]
}

type group[T comparable] struct {
	active  T
	waiting []T
}

// Admit adds x, received in group id, and reports whether it is active: it
// may run now, no earlier message of its group being held.
func (g *Groups[T]) Admit(id string, x T) bool {
	if g.m == nil {
		g.m = map[string]*group[T]{}
	}
	if gr := g.m[id]; gr != nil {
		gr.waiting = append(gr.waiting, x)
		return false
	}
	g.m[id] = &group[T]{active: x}
	return true
}

// Settled ends x, the active message of group id: when goesOn and another
// message of the group waits, that one becomes active and is returned
// (next, true); otherwise the messages still waiting are returned, in
// order, to be released, and the group is forgotten. A message that is not
// its group's active one (released while it waited) changes nothing.
func (g *Groups[T]) Settled(id string, x T, goesOn bool) (next T, ok bool, release []T) {
	gr := g.m[id]
	if gr == nil || gr.active != x {
		return next, false, nil
	}
	if goesOn && len(gr.waiting) > 0 {
		gr.active = gr.waiting[0]
		gr.waiting = gr.waiting[1:]
		return gr.active, true, nil
	}
	delete(g.m, id)
	return next, false, gr.waiting
}

// Drain returns every waiting message, group by group in order, to be
// released; the active ones stay, to be settled.
func (g *Groups[T]) Drain() (release []T) {
	for _, gr := range g.m {
		release = append(release, gr.waiting...)
		gr.waiting = nil
	}
	return release
}

// Active returns the active message of group id, if the group is held.
func (g *Groups[T]) Active(id string) (x T, ok bool) {
	if gr := g.m[id]; gr != nil {
		return gr.active, true
	}
	return x, false
}

// Len returns how many groups are held.
func (g *Groups[T]) Len() int { return len(g.m) }
