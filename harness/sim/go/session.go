package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/sets"
)

// A session keeps one scenario's Kueue running between requests, so a stream replay
// (harness/replay/onsim.py) hands it its events one at a time, in time order, without
// running the stream from the start for each: the driver decides when each job finishes
// from the admissions Kueue made, which only a running Kueue can tell it.
//
// The first line is a scenario with "session": true (its workloads and steps are not run);
// its answer is the scenario's Line. Then each line is one request,
//
//	{"step": {<one step of the contract>}}    answered {"changed": {...}, "unstable": [...], "error": ...}
//	{"end": true}                             answered {"ended": true}; the session stops
//
// where "changed" holds the outcomes that differ from the ones the session last answered
// (a workload just submitted, re-read after a write, or whose step-scoped eviction or
// repair came or went): every outcome would be re-read after each step otherwise, which
// made a long stream quadratic in its workloads.

// sessionRequest is one request line of a session.
type sessionRequest struct {
	Step *StepSpec `json:"step"`
	End  bool      `json:"end"`
}

// sessionAnswer is the answer to one step.
type sessionAnswer struct {
	Changed  *orderedMap[Result] `json:"changed"`
	Unstable []string            `json:"unstable,omitempty"`
	Error    *string             `json:"error"`
	Ended    bool                `json:"ended,omitempty"`
}

// session is what the driver keeps between a session's steps.
type session struct {
	touched sets.Set[string]  // outcomes re-read since the last answer
	sent    map[string][]byte // each workload's outcome as last answered
	faulted sets.Set[string]  // workloads a step evicted or repaired in the last answer
	steps   int               // steps answered so far (the "(after steps[i])" of a note)
}

// isSession says whether a scenario line opens a session.
func isSession(data []byte) bool {
	var head struct {
		Session bool `json:"session"`
	}
	return json.Unmarshal(data, &head) == nil && head.Session
}

// runSession answers a session's opening scenario, then its requests, until "end" or the
// end of the input; it reports an error of the input only.
func runSession(data []byte, scanner *bufio.Scanner, enc *json.Encoder, w *bufio.Writer,
	gates *gateSetter, log logr.Logger, timeout time.Duration) error {
	answer := func(v any) error {
		if err := enc.Encode(v); err != nil {
			return err
		}
		return w.Flush()
	}
	sc := &Scenario{}
	if err := json.Unmarshal(data, sc); err != nil {
		return answer(failed(sc.Name, nil, fmt.Errorf("bad scenario JSON: %w", err)))
	}
	ctx := context.Background()
	outcome := &orderedMap[Result]{}
	c, opening := openSession(ctx, sc, outcome, gates, log, timeout)
	if err := answer(opening); err != nil || c == nil {
		return err // a session that did not open takes no requests
	}
	defer c.stop()
	for scanner.Scan() {
		if len(scanner.Bytes()) == 0 {
			continue
		}
		req := &sessionRequest{}
		if err := json.Unmarshal(scanner.Bytes(), req); err != nil {
			msg := fmt.Sprintf("bad session request: %v", err)
			if err := answer(sessionAnswer{Error: &msg}); err != nil {
				return err
			}
			continue
		}
		if req.End || req.Step == nil {
			return answer(sessionAnswer{Ended: true})
		}
		if err := answer(c.sessionStep(ctx, sc, req.Step, outcome)); err != nil {
			return err
		}
	}
	return scanner.Err()
}

// openSession starts the scenario's Kueue as runScenario does before its first
// submission; the returned cluster is nil when that failed (the Line says why).
func openSession(ctx context.Context, sc *Scenario, outcome *orderedMap[Result], gates *gateSetter,
	log logr.Logger, timeout time.Duration) (c *cluster, line Line) {
	defer func() {
		if r := recover(); r != nil {
			line = failed(sc.Name, outcome, fmt.Errorf("panic: %v", r))
		}
	}()
	if err := gates.apply(sc.FeatureGates); err != nil {
		return nil, failed(sc.Name, nil, fmt.Errorf("featureGates: %w", err))
	}
	takePanic()
	c, err := startCluster(ctx, sc, log, timeout)
	if err != nil {
		return nil, failed(sc.Name, outcome, err)
	}
	for i := range sc.Admitted {
		outcome.set(sc.Admitted[i].Name, Result{})
	}
	fail := func(err error) (*cluster, Line) {
		c.stop()
		return nil, failed(sc.Name, outcome, err)
	}
	if err := c.settle(ctx); err != nil {
		return fail(err)
	}
	c.faults.beginStep()
	if err := c.refresh(ctx, outcome); err != nil {
		return fail(err)
	}
	c.session = &session{touched: sets.New[string](), sent: map[string][]byte{},
		faulted: sets.New[string]()}
	c.writes.takeMarked(forSession) // from here on, refresh re-reads only what was written
	for _, name := range outcome.keys {
		c.session.sent[name], _ = json.Marshal(outcome.values[name])
	}
	line = Line{Name: sc.Name, Outcome: outcome.clone()}
	for _, name := range outcome.keys {
		if note := outcome.values[name].note; note != "" {
			line.Notes = append(line.Notes, name+": "+note)
			if outcome.values[name].unstable {
				line.Unstable = append(line.Unstable, name+": "+note)
			}
		}
	}
	return c, line
}

// sessionStep applies one step as runScenario does and answers what it changed.
func (c *cluster) sessionStep(ctx context.Context, sc *Scenario, st *StepSpec,
	outcome *orderedMap[Result]) (out sessionAnswer) {
	s := c.session
	where := fmt.Sprintf(" (after steps[%d])", s.steps)
	s.steps++
	defer func() {
		if r := recover(); r != nil {
			msg := fmt.Sprintf("steps[%d] %s: panic: %v", s.steps-1, st.Action, r)
			out = sessionAnswer{Error: &msg}
		}
	}()
	c.faults.beginStep()
	err := c.applyStep(ctx, sc, st, outcome)
	if err == nil {
		err = c.refresh(ctx, outcome)
	}
	if err != nil {
		msg := fmt.Sprintf("steps[%d] %s: %v", s.steps-1, st.Action, err)
		return sessionAnswer{Error: &msg}
	}
	out.Changed = &orderedMap[Result]{}
	for _, name := range outcome.keys {
		if _, known := s.sent[name]; known && !s.touched.Has(name) {
			continue
		}
		r := outcome.values[name]
		b, err := json.Marshal(r)
		if err != nil {
			msg := err.Error()
			return sessionAnswer{Error: &msg}
		}
		// A step's eviction or repair is news even when it reads as the last one did.
		if bytes.Equal(b, s.sent[name]) && r.Replaced == nil && r.Evicted == nil {
			continue
		}
		s.sent[name] = b
		out.Changed.set(name, r)
	}
	s.touched.Clear()
	s.faulted = sets.KeySet(c.faults.evicted).Union(sets.KeySet(c.faults.replaced))
	if c.unstable.Len() > 0 {
		for _, name := range outcome.keys {
			if c.unstable.Has(name) && c.created.Has(name) && !outcome.values[name].Rejected {
				out.Unstable = append(out.Unstable, name+where+": "+c.notes[name])
			}
		}
	}
	return out
}

// refreshWritten is refresh in a session: it re-reads only the outcomes of workloads
// written since the last refresh, and those a step evicted or repaired now or in the last
// answer (their outcome carries that for one step only).
func (c *cluster) refreshWritten(ctx context.Context, outcome *orderedMap[Result]) error {
	s := c.session
	written := c.writes.takeMarked(forSession)
	marked := written.names.Union(s.faulted).Union(sets.KeySet(c.faults.evicted)).
		Union(sets.KeySet(c.faults.replaced))
	if marked.Len() == 0 && !written.all {
		return nil
	}
	for _, name := range outcome.keys {
		if !written.all && !marked.Has(name) {
			continue
		}
		if prev := outcome.values[name]; prev.Rejected || !c.created.Has(name) {
			continue
		}
		res, err := c.read(ctx, name)
		if err != nil {
			return err
		}
		outcome.set(name, res)
		s.touched.Insert(name)
	}
	return nil
}
