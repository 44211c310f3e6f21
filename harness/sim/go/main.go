// Command kueue-sim runs Kueue v0.19.2's real scheduler in-process, over a
// controller-runtime fake client, on scenarios of the kueue-tas-harness contract.
//
// Input: JSON Lines on stdin, one scenario per line (the YAML contract's keys).
// Output: one JSON line per scenario on stdout:
//
//	{"name": ..., "outcome": {workload: {"admitted": ..., ...}}, "error": null}
//
// A scenario that makes Kueue panic or stall reports "error" and the batch goes on.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Result is one workload's outcome in the oracle's JSON shape.
type Result struct {
	Admitted bool `json:"admitted"`
	Rejected bool `json:"rejected,omitempty"`
	// QuotaReserved: not admitted, holding quota and topology while a check is not Ready.
	QuotaReserved bool                          `json:"quotaReserved,omitempty"`
	Placement     *orderedMap[map[string]int32] `json:"placement,omitempty"`
	// Flavors: pod set -> the ResourceFlavor it was admitted on.
	Flavors *orderedMap[string] `json:"flavors,omitempty"`
	Message *string             `json:"message,omitempty"`
	// Preempted: the workload was evicted by preemption at some time.
	Preempted bool `json:"preempted,omitempty"`
	// Replaced: pod set -> node Kueue replaced during the step -> the nodes that took its
	// pods; Evicted: an eviction other than by preemption during the step.
	Replaced *orderedMap[map[string][]string] `json:"replaced,omitempty"`
	Evicted  *Eviction                        `json:"evicted,omitempty"`
	note     string                           // why the outcome is unusual; goes to Line.Notes
	// unstable: Kueue never settles on this outcome (its message alternates from cycle to
	// cycle); goes to Line.Unstable as well.
	unstable bool
}

// Line is one line of output.
type Line struct {
	Name    string              `json:"name"`
	Outcome *orderedMap[Result] `json:"outcome"`
	Error   *string             `json:"error"`
	// Notes explain outcomes a reader might not expect (e.g. a workload Kueue never
	// evaluated); they are diagnostics, not part of the outcome.
	Notes []string `json:"notes,omitempty"`
	// Unstable lists the notes of outcomes Kueue never settles on (a StrictFIFO head whose
	// flavor scan wraps, a preemption loop): which one a cluster shows depends on timing
	// (docs/dev/kueue-v0.19.2-rules-v2.md §8).
	Unstable []string `json:"unstable,omitempty"`
	// Steps holds the outcome after each step (the harness\'s `steps` extension).
	Steps []*orderedMap[Result] `json:"steps,omitempty"`
}

func main() {
	verbosity := flag.Int("v", -1, "log Kueue to stderr at this verbosity (default: silent)")
	timeout := flag.Duration("settle-timeout", 30*time.Second,
		"longest wait for the scheduler to settle one workload")
	flag.BoolVar(&dumpStatus, "dump-status", false, "print each settled Workload's status to stderr")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	if os.Getenv("GOGC") == "" {
		// The fake API server copies every object through JSON: most of the heap is
		// short-lived garbage, collected four times less often than by default.
		debug.SetGCPercent(400)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil && pprof.StartCPUProfile(f) == nil {
			defer pprof.StopCPUProfile()
		}
	}

	log := logr.Discard()
	if *verbosity >= 0 {
		log = funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) },
			funcr.Options{Verbosity: *verbosity, LogTimestamp: true})
	}
	klog.SetLogger(log)
	ctrl.SetLogger(log)
	installPanicHandler()

	if err := serve(os.Stdin, os.Stdout, log, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "kueue-sim:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

func serve(in *os.File, out *os.File, log logr.Logger, timeout time.Duration) error {
	scanner := bufio.NewScanner(in)
	scanner.Buffer(make([]byte, 1<<20), 64<<20)
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	gates := newGateSetter()
	for scanner.Scan() {
		if len(scanner.Bytes()) == 0 {
			continue
		}
		if isSession(scanner.Bytes()) {
			if err := runSession(scanner.Bytes(), scanner, enc, w, gates, log, timeout); err != nil {
				return err
			}
			continue
		}
		line := runLine(scanner.Bytes(), gates, log, timeout)
		if err := enc.Encode(line); err != nil {
			return err
		}
		// One answer per question: the caller streams and waits line by line.
		if err := w.Flush(); err != nil {
			return err
		}
	}
	return scanner.Err()
}

func runLine(data []byte, gates *gateSetter, log logr.Logger, timeout time.Duration) (line Line) {
	sc := &Scenario{}
	if err := json.Unmarshal(data, sc); err != nil {
		return failed(sc.Name, nil, fmt.Errorf("bad scenario JSON: %w", err))
	}
	line.Name = sc.Name
	outcome := &orderedMap[Result]{}
	defer func() {
		if r := recover(); r != nil {
			line = failed(sc.Name, outcome, fmt.Errorf("panic: %v", r))
		}
	}()
	if err := gates.apply(sc.FeatureGates); err != nil {
		return failed(sc.Name, nil, fmt.Errorf("featureGates: %w", err))
	}
	var steps []*orderedMap[Result]
	err := runScenario(context.Background(), sc, outcome, &steps, log, timeout)
	first := outcome
	if len(steps) > 0 {
		first, steps = steps[0], steps[1:]
	}
	if err != nil {
		line = failed(sc.Name, first, err)
	} else {
		line = Line{Name: sc.Name, Outcome: first}
	}
	line.Steps = steps
	for i, o := range append([]*orderedMap[Result]{first}, steps...) {
		for _, name := range o.keys {
			if note := o.values[name].note; note != "" {
				where := ""
				if i > 0 {
					where = fmt.Sprintf(" (after steps[%d])", i-1)
				}
				line.Notes = append(line.Notes, name+where+": "+note)
				if o.values[name].unstable {
					line.Unstable = append(line.Unstable, name+where+": "+note)
				}
			}
		}
	}
	return line
}

func failed(name string, outcome *orderedMap[Result], err error) Line {
	msg := err.Error()
	return Line{Name: name, Outcome: outcome, Error: &msg}
}

// runScenario creates the admitted workloads, then submits the others one at a time, in
// file order, each settling (with everything it sets off) before the next: an admitted
// workload's usage is seen by the ones after it. Every outcome is re-read after each
// submission and step: a later one may preempt or admit an earlier workload.
func runScenario(ctx context.Context, sc *Scenario, outcome *orderedMap[Result],
	steps *[]*orderedMap[Result], log logr.Logger, timeout time.Duration) error {
	takePanic() // a panic left by an earlier scenario is not this one's
	c, err := startCluster(ctx, sc, log, timeout)
	if err != nil {
		return err
	}
	defer c.stop()
	for i := range sc.Admitted {
		outcome.set(sc.Admitted[i].Name, Result{})
	}
	if err := c.settle(ctx); err != nil {
		return err
	}
	c.faults.beginStep() // `evicted` is what a step evicts; a HoldAndDrain drain is no step
	if err := c.refresh(ctx, outcome); err != nil {
		return err
	}
	for i := range sc.Workloads {
		if err := c.submitSpec(ctx, sc, &sc.Workloads[i], outcome); err != nil {
			return err
		}
	}
	// `evicted` is what a step evicts: not a PodsReady timeout during the submissions.
	c.faults.beginStep()
	if err := c.refresh(ctx, outcome); err != nil {
		return err
	}
	*steps = append(*steps, outcome.clone()) // the state after submission, before any step
	for i := range sc.Steps {
		c.faults.beginStep()
		if err := c.applyStep(ctx, sc, &sc.Steps[i], outcome); err != nil {
			return fmt.Errorf("steps[%d] %s: %w", i, sc.Steps[i].Action, err)
		}
		if err := c.refresh(ctx, outcome); err != nil {
			return fmt.Errorf("steps[%d] %s: %w", i, sc.Steps[i].Action, err)
		}
		*steps = append(*steps, outcome.clone())
	}
	return nil
}

// submitSpec builds the Workload the Job integration would create (the Job webhook's
// checks, the priority, the Workload webhook) and, if accepted, runs it through the
// scheduler, then re-reads every outcome.
func (c *cluster) submitSpec(ctx context.Context, sc *Scenario, spec *WorkloadSpec,
	outcome *orderedMap[Result]) error {
	validate := !sc.SimOptions.SkipWebhook
	wl, err := buildWorkload(spec, validate)
	if err == nil {
		err = c.preparePriority(ctx, wl, spec.PriorityClass)
	}
	if err == nil && validate {
		err = validateWorkload(wl)
	}
	var rej *rejection
	if errors.As(err, &rej) {
		msg := rej.message
		outcome.set(spec.Name, Result{Rejected: true, Message: &msg})
		return nil
	}
	if err != nil {
		return fmt.Errorf("workload %s: %w", spec.Name, err)
	}
	if spec.PodsReady != nil && !*spec.PodsReady {
		c.neverReady.Insert(spec.Name)
	}
	res, err := c.submit(ctx, wl)
	if err != nil {
		return err
	}
	outcome.set(spec.Name, res)
	return c.refresh(ctx, outcome)
}
