package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	batchv1 "k8s.io/api/batch/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
	schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	controllerconstants "sigs.k8s.io/kueue/pkg/controller/constants"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
	"sigs.k8s.io/kueue/pkg/scheduler"
	preemptexpectations "sigs.k8s.io/kueue/pkg/scheduler/preemption/expectations"
	utiltas "sigs.k8s.io/kueue/pkg/util/tas"
	"sigs.k8s.io/kueue/pkg/webhooks"
	"sigs.k8s.io/kueue/pkg/workload"
)

// maxCycles bounds the scheduling cycles one submission or step may take before the sim
// reports that Kueue never came to rest; restCycles is how many cycles in a row must start
// from states already seen for Kueue to count as at rest while it retries a head.
const (
	maxCycles  = 1000
	restCycles = 8
)

// cluster is one scenario's Kueue: fresh caches, queues, fake API server and a running
// scheduler loop. Nothing is shared between scenarios except Kueue's feature gates.
type cluster struct {
	client   client.Client
	cache    *schdcache.Cache
	queues   *qcache.Manager
	requeuer interface{ ProcessRequeues(context.Context) int }
	clock    *clocktesting.FakeClock
	timers   *timerClock // the queue manager's clock: its backoff timers wait for the driver
	hook     *cycleHook
	writes   *statusWrites
	cancel   context.CancelFunc
	log      logr.Logger
	timeout  time.Duration

	cqs       map[string]*kueue.ClusterQueue
	cohorts   []*kueue.Cohort
	flavors   map[string]*kueue.ResourceFlavor
	nodes     map[string]*NodeSpec
	usagePods map[string][]client.ObjectKey // usage name -> its pods
	usageNode map[string]string             // usage name -> node
	created   sets.Set[string]              // workloads that exist (not refused)
	nsOf      map[string]string             // workload name -> its namespace
	lqCQ      map[string]string             // "namespace/LocalQueue" -> its ClusterQueue
	// notes say why a workload's outcome is unusual (see Result.note); unstable names
	// those whose note says Kueue never settles on it.
	notes    map[string]string
	unstable sets.Set[string]
	// faults: Nodes and Pods for Kueue's node failure controller, and what Kueue repaired
	// during the current step (faults.go).
	faults faultState
	// neverReady: workloads whose pods never turn Ready (`podsReady: false`); podsReady:
	// the scenario's waitForPodsReady timers, on or off (podsready.go).
	neverReady  sets.Set[string]
	podsReady   podsReadyTimers
	podsReadyOn bool
	// bindable: where kube-scheduler can bind each pod set's pods (podsbind.go).
	bindable bindableNodes
	// blockAdmission (blockadmission.go): the scheduler stopped mid-cycle to wait for
	// PodsReady; the workloads whose pods a pods-not-ready step holds.
	waitingPodsReady bool
	podsHeld         map[string]bool
	// session: set while a session (session.go) answers steps one at a time.
	session *session
	sigs    workloadSigs // the Workloads' parts of signature (signature.go)
	// queuesUsed: the "namespace/LocalQueue" of every Workload created.
	queuesUsed sets.Set[string]
}

// startCluster builds the objects of the scenario and feeds them to Kueue the way its
// controllers would (nodes and non-TAS pods to the TAS cache; flavors, topologies,
// ClusterQueues and LocalQueues to the cache and queue manager; admitted workloads to the
// cache), then starts the scheduler loop with scheduler.Start, Kueue's exported entry
// point, and waits until it stands at the start of its first cycle.
func startCluster(parent context.Context, sc *Scenario, log logr.Logger, timeout time.Duration) (*cluster, error) {
	ctx, cancel := context.WithCancel(ctrl.LoggerInto(parent, log))
	clock := clocktesting.NewFakeClock(startTime(sc))
	hook := newCycleHook(clock, ctx.Done(), podsReadyTracked(sc))
	writes := &statusWrites{}
	cl, err := newFakeClient(writes)
	if err != nil {
		cancel()
		return nil, err
	}
	c := &cluster{
		client: cl, clock: clock, timers: newTimerClock(clock), hook: hook, writes: writes,
		cancel: cancel, log: log, timeout: timeout, cqs: map[string]*kueue.ClusterQueue{},
		flavors: map[string]*kueue.ResourceFlavor{}, nodes: map[string]*NodeSpec{},
		usagePods: map[string][]client.ObjectKey{}, usageNode: map[string]string{},
		notes: map[string]string{}, unstable: sets.New[string](), created: sets.New[string](),
		nsOf: map[string]string{}, lqCQ: map[string]string{}, neverReady: sets.New[string](),
		podsHeld: map[string]bool{}, queuesUsed: sets.New[string](),
	}
	if err := podsReadyRefused(sc); err != nil {
		cancel()
		return nil, err
	}
	c.podsReady, c.podsReadyOn = podsReadyConfig(sc)
	c.bindable = sc.BindableNodes
	fail := func(err error) (*cluster, error) {
		cancel()
		return nil, err
	}
	if err := c.setup(ctx, sc); err != nil {
		return fail(err)
	}
	for i := range sc.Admitted {
		if err := c.addAdmitted(ctx, &sc.Admitted[i]); err != nil {
			return fail(fmt.Errorf("admitted[%d] %s: %w", i, sc.Admitted[i].Name, err))
		}
	}
	expectations := preemptexpectations.New()
	// NewManagerForUnitTestsWithRequeuer gives a manager whose inadmissible-workload
	// requeuer only records requests until ProcessRequeues: flushes take effect between
	// two scheduling cycles, where the controllers act (see deliver).
	afs := admissionFairSharing(sc.KueueConfig.AdmissionFairSharing)
	c.queues, c.requeuer = qcache.NewManagerForUnitTestsWithRequeuer(c.client, c.cache,
		append([]qcache.Option{qcache.WithPreemptionExpectations(expectations),
			qcache.WithClock(c.timers), qcache.WithAdmissionFairSharing(afs)},
			queueResourceOptions(sc.KueueConfig.Resources)...)...)
	// Adding a LocalQueue makes the queue manager adopt the Workloads that already name it,
	// the admitted ones included, as when Kueue starts over existing objects: deleting or
	// evicting one of them later flushes its cohort's inadmissible workloads, as it does
	// for every workload Kueue has seen pending.
	if err := c.addQueues(ctx, sc); err != nil {
		return fail(err)
	}
	s := scheduler.New(c.queues, c.cache, c.client, recorder{},
		append([]scheduler.Option{scheduler.WithPreemptionExpectations(expectations),
			scheduler.WithClock(nil, clock), scheduler.WithFairSharing(sc.KueueConfig.FairSharing),
			scheduler.WithAdmissionFairSharing(afs)},
			quotaCheckOptions(sc.KueueConfig.Resources)...)...)
	go c.queues.CleanUpOnContext(ctx) // wakes the loop's blocking Heads() on cancel
	go c.cache.CleanUpOnContext(ctx)  // and its WaitForPodsReady (blockAdmission), as main.go
	if err := s.Start(ctrl.LoggerInto(ctx, hookedLogger(hook, log))); err != nil {
		return fail(err)
	}
	if err := hook.awaitBoundary(timeout); err != nil {
		return fail(fmt.Errorf("starting the scheduler: %w", err))
	}
	if err := c.drainStopped(ctx); err != nil {
		return fail(err)
	}
	return c, nil
}

// startTime is where the scenario's clock starts: now, or just after the last reservation
// of the admitted workloads if that is later.
func startTime(sc *Scenario) time.Time {
	start := time.Now().Truncate(time.Second)
	for i := range sc.Admitted {
		if t, ok := reservedAt(&sc.Admitted[i]); ok && !t.Before(start) {
			start = t.Add(time.Second)
		}
	}
	return start
}

func reservedAt(a *AdmittedSpec) (time.Time, bool) {
	cond := apimeta.FindStatusCondition(a.Status.Conditions, kueue.WorkloadQuotaReserved)
	if cond == nil {
		return time.Time{}, false
	}
	return cond.LastTransitionTime.Time, true
}

func (c *cluster) setup(ctx context.Context, sc *Scenario) error {
	// Fair sharing as Kueue's main.go sets it up from the Configuration.
	c.cache = schdcache.New(c.client, append([]schdcache.Option{
		schdcache.WithFairSharing(sc.KueueConfig.FairSharing != nil),
		schdcache.WithPodsReadyTracking(podsReadyTracked(sc)),
		schdcache.WithAdmissionFairSharing(admissionFairSharing(sc.KueueConfig.AdmissionFairSharing))},
		cacheResourceOptions(sc.KueueConfig.Resources)...)...)
	if err := c.createNamespaces(ctx, sc); err != nil {
		return err
	}
	tas := c.cache.TASCache()
	for i := range sc.Nodes {
		c.nodes[sc.Nodes[i].Name] = &sc.Nodes[i]
		tas.SyncNode(buildNode(&sc.Nodes[i]))
	}
	for i := range sc.Usage {
		c.addUsage(fmt.Sprintf("usage-%d", i), &sc.Usage[i])
	}
	for i := range sc.ResourceFlavors {
		rf, err := buildFlavor(&sc.ResourceFlavors[i])
		if err != nil {
			return err
		}
		c.cache.AddOrUpdateResourceFlavor(c.log, rf)
		c.flavors[rf.Name] = rf
		// Kueue's node failure controller reads a pod set's flavor (podset.FromAssignment).
		if err := c.client.Create(ctx, rf.DeepCopy()); err != nil {
			return fmt.Errorf("creating ResourceFlavor %s: %w", rf.Name, err)
		}
	}
	for i := range sc.Topologies {
		c.cache.AddOrUpdateTopology(c.log, buildTopology(&sc.Topologies[i]))
	}
	for i := range sc.WorkloadPriorityClasses {
		if err := c.client.Create(ctx, buildPriorityClass(&sc.WorkloadPriorityClasses[i])); err != nil {
			return fmt.Errorf("creating WorkloadPriorityClass: %w", err)
		}
	}
	// Cohorts before ClusterQueues, as Kueue's cohort controller hands them to the cache.
	for i := range sc.Cohorts {
		cohort := buildCohort(&sc.Cohorts[i])
		if err := c.client.Create(ctx, cohort); err != nil {
			return fmt.Errorf("creating Cohort %s: %w", cohort.Name, err)
		}
		if err := c.cache.AddOrUpdateCohort(cohort); err != nil {
			return fmt.Errorf("adding Cohort %s to the cache: %w", cohort.Name, err)
		}
		c.cohorts = append(c.cohorts, cohort)
	}
	if err := c.addAdmissionChecks(ctx, sc); err != nil {
		return err
	}
	for i := range sc.ClusterQueues {
		cq, err := buildClusterQueue(&sc.ClusterQueues[i])
		if err != nil {
			return err
		}
		if err := c.client.Create(ctx, cq); err != nil {
			return fmt.Errorf("creating ClusterQueue %s: %w", cq.Name, err)
		}
		for _, lq := range localQueuesOf(sc, cq.Name) {
			if err := c.client.Create(ctx, lq); err != nil {
				return fmt.Errorf("creating LocalQueue %s/%s: %w", lq.Namespace, lq.Name, err)
			}
			c.lqCQ[lq.Namespace+"/"+lq.Name] = cq.Name
		}
		// The cache picks up the LocalQueue from the client when the ClusterQueue arrives,
		// and creates the cohort the ClusterQueue names.
		if err := c.cache.AddClusterQueue(ctx, cq); err != nil {
			return fmt.Errorf("adding ClusterQueue %s to the cache: %w", cq.Name, err)
		}
		c.cqs[cq.Name] = cq
	}
	return nil
}

// addUsage hands the entry's pods to the TAS cache, as Kueue's non-TAS pod controller
// does for pods it sees bound to nodes.
func (c *cluster) addUsage(prefix string, u *UsageSpec) {
	if u.Name != "" {
		prefix = u.Name
	}
	for _, pod := range buildUsagePods(prefix, u) {
		c.cache.TASCache().Update(pod, c.log)
		c.usagePods[prefix] = append(c.usagePods[prefix], client.ObjectKeyFromObject(pod))
	}
	c.usageNode[prefix] = u.Node
}

func (c *cluster) addQueues(ctx context.Context, sc *Scenario) error {
	for _, cohort := range c.cohorts {
		c.queues.AddOrUpdateCohort(ctx, cohort)
	}
	for i := range sc.ClusterQueues {
		cq := c.cqs[sc.ClusterQueues[i].Name]
		if err := c.queues.AddClusterQueue(ctx, cq); err != nil {
			return fmt.Errorf("adding ClusterQueue %s to the queue manager: %w", cq.Name, err)
		}
		ref := kueue.ClusterQueueReference(cq.Name)
		if !c.cache.ClusterQueueActive(ref) && !c.meantInactive(cq) {
			_, reason, msg := c.cache.ClusterQueueReadiness(ref)
			if !inactiveByChecks(reason) {
				return fmt.Errorf("ClusterQueue %s is not active: %s: %s", cq.Name, reason, msg)
			}
			// A missing or inactive AdmissionCheck: the scenario means it.
		}
		for _, lq := range localQueuesOf(sc, cq.Name) {
			if lqStopped(lq) {
				continue // the LocalQueue controller's Create adds only one without a stopPolicy
			}
			if err := c.queues.AddLocalQueue(ctx, lq); err != nil {
				return fmt.Errorf("adding LocalQueue %s/%s: %w", lq.Namespace, lq.Name, err)
			}
		}
	}
	return nil
}

func (c *cluster) stop() {
	c.cancel()
}

// preparePriority sets spec.priorityClassRef and spec.priority the way Kueue's job
// reconciler does for a Job labelled with the WorkloadPriorityClass
// (jobframework.PrepareWorkloadPriority); without a class, the priority is the default, 0.
func (c *cluster) preparePriority(ctx context.Context, wl *kueue.Workload, class string) error {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: wl.Name, Namespace: wl.Namespace}}
	if class != "" {
		job.Labels = map[string]string{controllerconstants.WorkloadPriorityClassLabel: class}
	}
	if err := jobframework.PrepareWorkloadPriority(ctx, c.client, job, wl, nil); err != nil {
		return fmt.Errorf("workload %s: priority: %w", wl.Name, err)
	}
	return nil
}

// create stores a new Workload, its creation second the clock's current one (then the
// clock moves on: "created in this order" never falls to UID tie-breaks), and returns it
// as the API server stores it (empty maps and lists dropped by JSON), which is the form
// Kueue's controllers see and hash.
func (c *cluster) create(ctx context.Context, wl *kueue.Workload, at time.Time) (*kueue.Workload, error) {
	wl.CreationTimestamp = metav1.NewTime(at)
	if err := c.client.Create(ctx, wl); err != nil {
		return nil, fmt.Errorf("creating workload %s: %w", wl.Name, err)
	}
	c.created.Insert(wl.Name)
	c.nsOf[wl.Name] = wl.Namespace
	c.queuesUsed.Insert(wl.Namespace + "/" + string(wl.Spec.QueueName))
	stored := &kueue.Workload{}
	if err := c.client.Get(ctx, client.ObjectKeyFromObject(wl), stored); err != nil {
		return nil, fmt.Errorf("reading back workload %s: %w", wl.Name, err)
	}
	return stored, nil
}

// addAdmitted creates a workload that already holds quota: the Workload, then its status
// (the admission and conditions harness/admission.py built) checked by Kueue's Workload
// webhook as an update, then what the workload controller's Create handler does for a
// Workload with quota reserved: add it to the cache (quota and TAS usage).
func (c *cluster) addAdmitted(ctx context.Context, spec *AdmittedSpec) error {
	wl, err := buildWorkload(&spec.WorkloadSpec, true)
	if err != nil {
		return err
	}
	if err := c.preparePriority(ctx, wl, spec.PriorityClass); err != nil {
		return err
	}
	if err := validateWorkload(wl); err != nil {
		return err
	}
	at, ok := reservedAt(spec)
	if !ok {
		return fmt.Errorf("status has no %s condition", kueue.WorkloadQuotaReserved)
	}
	stored, err := c.create(ctx, wl, at)
	if err != nil {
		return err
	}
	admitted := stored.DeepCopy()
	admitted.Status = *spec.Status.DeepCopy()
	if errs := webhooks.ValidateWorkloadUpdate(admitted, stored); len(errs) > 0 {
		return fmt.Errorf("Kueue's Workload webhook refuses the admission: %w", errs.ToAggregate())
	}
	if !workload.HasQuotaReservation(admitted) || admitted.Status.Admission == nil {
		return fmt.Errorf("status does not reserve quota: %s=True and status.admission are needed",
			kueue.WorkloadQuotaReserved)
	}
	if err := c.client.Status().Update(ctx, admitted); err != nil {
		return fmt.Errorf("storing the admission: %w", err)
	}
	if err := c.client.Get(ctx, client.ObjectKeyFromObject(admitted), stored); err != nil {
		return err
	}
	workload.AdjustResources(ctx, c.client, stored)
	if !c.cache.AddOrUpdateWorkload(c.log, stored) {
		return fmt.Errorf("the cache did not take the admission to ClusterQueue %s",
			admitted.Status.Admission.ClusterQueue)
	}
	if err := c.jobPodsStarted(ctx, &kueue.Workload{}, stored); err != nil {
		return err
	}
	if c.usesChecks() {
		return c.reconcileChecks(ctx, stored.Name)
	}
	return nil
}

// submit creates the workload and runs the scheduler until Kueue has done all it will
// with it and with whatever it set off (preemptions, requeued victims).
func (c *cluster) submit(ctx context.Context, wl *kueue.Workload) (Result, error) {
	stored, err := c.create(ctx, wl, c.clock.Now())
	if err != nil {
		return Result{}, err
	}
	c.clock.Step(time.Second)
	// What Kueue's workload controller does with a new Workload (Create handler).
	workload.AdjustResources(ctx, c.client, stored)
	if err := c.queues.AddOrUpdateWorkload(c.log, stored); err != nil && !c.inStoppedQueue(ctx, stored) {
		return Result{}, fmt.Errorf("queueing workload %s: %w", wl.Name, err)
	}
	if c.usesChecks() {
		if err := c.reconcileChecks(ctx, wl.Name); err != nil {
			return Result{}, err
		}
	}
	if err := c.settle(ctx); err != nil {
		return Result{}, fmt.Errorf("workload %s: %w", wl.Name, err)
	}
	return c.read(ctx, wl.Name)
}

// settle runs scheduling cycles until Kueue comes to rest: before each cycle the
// controllers act on what the last one decided (deliver); Kueue is at rest when no
// ClusterQueue has a workload to pop (every pending one is parked as inadmissible), or when
// the state before a cycle has only repeated states seen since the change for restCycles
// cycles in a row (a head Kueue retries every cycle: StrictFIFO, or a BestEffortFIFO head
// requeued at once); either way only once no backoff timer is left to fire. A workload whose message differs within those recurring states never
// settles (a StrictFIFO flavor scan wrapping, or a tie Kueue breaks in map order each time):
// it gets a note and is listed as unstable.
func (c *cluster) settle(ctx context.Context) error {
	clear(c.notes)
	c.unstable.Clear()
	c.sigs.compact()
	seen := map[state]int{} // state -> the cycle it was first seen before
	var history []map[string]string
	recurring, since := 0, 0 // cycles in a row that started from a state seen before; from when
	idle := 0                // timers fired at rest since the last state not seen before
	batches := 0             // requeuer batches fired at rest since the last state not seen before
	for n := 0; ; n++ {
		if err := c.deliver(ctx); err != nil {
			return err
		}
		if p := takePanic(); p != "" {
			return &kueuePanic{msg: p}
		}
		if wrote, err := c.blockInactive(ctx); err != nil || wrote {
			if err != nil {
				return err
			}
			continue // the workload controller's writes reach the queues first
		}
		if c.waitingPodsReady && n < maxCycles {
			// The scheduler waits for PodsReady mid-cycle: it goes on once the cache's
			// check passes; until then Kueue is at rest but for its timers (the requeuer
			// runs on its own).
			c.requeueBatch(ctx)
			went, err := c.wakeIfPodsReady(ctx)
			if err != nil {
				return err
			}
			if went || c.timers.fireNext() {
				continue
			}
			return nil
		}
		if c.nothingToPop() && c.hook.landRefused() {
			continue // Heads waits for the refused admissions' requeue
		}
		if c.nothingToPop() && !c.hook.secondPassQueued() {
			// Nothing to pop: Kueue is at rest unless the requeuer's batch or a backoff
			// timer is due (a second pass); the clock moves to the earliest timer.
			if c.requeueBatch(ctx) {
				continue
			}
			if n < maxCycles && c.timers.fireNext() {
				continue
			}
			return nil
		}
		sig, messages, err := c.signature(ctx)
		if err != nil {
			return err
		}
		c.log.V(4).Info("kueue-sim: state before the next scheduling cycle", "state", sig.queues+sig.workloads)
		if first, ok := seen[sig]; ok {
			if recurring == 0 || first < since {
				since = first
			}
			recurring++
		} else {
			seen[sig] = n
			recurring, idle, batches = 0, 0, 0
		}
		history = append(history, messages)
		// The requeuer's batch fires about once a second while Kueue keeps cycling; a loop
		// that flushes the parked workloads on every turn (a preemption ping-pong evicting
		// and readmitting a workload) brings them back every second forever. Kueue is at
		// rest in that loop once restCycles batches in a row led to no state not seen before.
		if recurring == restCycles && batches < restCycles && c.requeueBatch(ctx) {
			batches++
			recurring = 0
			continue
		}
		if recurring == restCycles {
			// A head retried every cycle (StrictFIFO) keeps Kueue busy, but real time still
			// passes: a backoff timer (a second pass) fires meanwhile. Kueue is at rest when
			// none is left, or when restCycles fired in a row led to no state not seen
			// before (a timer that re-arms itself).
			if idle < restCycles && n < maxCycles && c.timers.fireNext() {
				idle++
				recurring = 0
				continue
			}
			c.noteAlternating(history[since:])
			c.hook.landRefused() // a refused admission is back in its queue soon after
			return nil
		}
		if n == maxCycles {
			return fmt.Errorf("Kueue did not come to rest within %d scheduling cycles", maxCycles)
		}
		blocked, err := c.hook.runCycle(ctx, c.timeout)
		c.waitingPodsReady = blocked
		if err != nil {
			if p := takePanic(); p != "" {
				return &kueuePanic{msg: p}
			}
			return err
		}
	}
}

// signature is the state a scheduling cycle starts from: per ClusterQueue the workloads it
// can pop (with the flavor scan each has recorded) and those parked as inadmissible, and
// every Workload's status. Also returns each workload's pending message.
func (c *cluster) signature(ctx context.Context) (state, map[string]string, error) {
	var b strings.Builder
	heaps, parked := c.queues.Dump(), c.queues.DumpInadmissible()
	for _, name := range sortedKeys(c.cqs) {
		ref := kueue.ClusterQueueReference(name)
		scans := map[string]string{}
		queued := refNames(heaps[ref])
		for _, info := range c.queuedInfos(ref, heaps[ref]) {
			if info.LastAssignment != nil {
				scans[info.Obj.Name] = fmt.Sprint(info.LastAssignment.LastTriedFlavorIdx)
			}
		}
		fmt.Fprintf(&b, "cq %s heap", name)
		for _, w := range queued {
			fmt.Fprintf(&b, " %s%s", w, scans[w])
		}
		fmt.Fprintf(&b, " parked %v\n", refNames(parked[ref]))
	}
	parts, names, err := c.workloadParts(ctx)
	if err != nil {
		return state{}, nil, err
	}
	readable := c.log.V(4).Enabled() // the lines themselves, for the log
	var workloads []byte
	messages := map[string]string{}
	for i, part := range parts {
		if readable {
			workloads = append(workloads, part.line...)
		} else {
			workloads = binary.AppendUvarint(workloads, part.id)
		}
		if part.pending {
			messages[names[i]] = part.message
		}
	}
	return state{queues: b.String(), workloads: string(workloads)}, messages, nil
}

// state is what a scheduling cycle starts from (signature): the queues' part, and every
// Workload's part as the numbers of their lines (workloadSigs.numbered; the lines when
// logged), which tell two states apart exactly as the lines do.
type state struct{ queues, workloads string }

// noteAlternating records, for each workload whose pending message differs between the
// cycles Kueue keeps repeating, that it alternates: its outcome is then whichever message
// the sim stopped at, and a cluster may show any of them.
func (c *cluster) noteAlternating(period []map[string]string) {
	names := map[string]bool{}
	for _, m := range period {
		for name := range m {
			names[name] = true
		}
	}
	for _, name := range sortedKeys(names) {
		var seen []string
		for _, m := range period {
			if msg := m[name]; !slices.Contains(seen, msg) {
				seen = append(seen, msg)
			}
		}
		if len(seen) > 1 {
			slices.Sort(seen)
			c.notes[name] = "its message changes from one scheduling cycle to the next: " +
				strings.Join(quoteAll(seen), " | ")
			c.unstable.Insert(name)
		}
	}
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

func refNames(refs []workload.Reference) []string {
	out := make([]string, 0, len(refs))
	for _, r := range refs {
		out = append(out, nameOf(r))
	}
	slices.Sort(out)
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// nameOf turns a workload.Reference ("namespace/name") into the workload's name.
func nameOf(ref workload.Reference) string {
	s := string(ref)
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// dumpStatus prints every read Workload's status to stderr (flag -dump-status).
var dumpStatus bool

type kueuePanic struct{ msg string }

func (p *kueuePanic) Error() string { return "Kueue panicked: " + p.msg }

// read turns the Workload's stored status into the oracle's outcome for it.
func (c *cluster) read(ctx context.Context, name string) (Result, error) {
	wl := &kueue.Workload{}
	if err := c.client.Get(ctx, c.key(name), wl); err != nil {
		return Result{}, fmt.Errorf("reading workload %s: %w", name, err)
	}
	if dumpStatus {
		if b, err := json.Marshal(wl.Status); err == nil {
			fmt.Fprintf(os.Stderr, "workload %s status: %s\n", name, b)
		}
	}
	res := Result{Preempted: wasPreempted(wl), note: c.notes[name], unstable: c.unstable.Has(name),
		Evicted: c.faults.evicted[name]}
	if wl.Status.Admission != nil && !workload.IsAdmitted(wl) && c.usesChecks() {
		// Quota and topology reserved, waiting for admission checks: no Admitted
		// condition (SyncAdmittedCondition without UnadmittedWorkloadsObservability).
		res.QuotaReserved = true
		res.Placement = placement(wl.Status.Admission)
		res.Flavors = c.flavorsOf(wl.Status.Admission)
		empty := ""
		res.Message = &empty
		return res, nil
	}
	if wl.Status.Admission != nil {
		res.Admitted = true
		res.Replaced = c.replacedOf(wl)
		res.Placement = placement(wl.Status.Admission)
		res.Flavors = c.flavorsOf(wl.Status.Admission)
		return res, nil
	}
	cond := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved)
	msg := ""
	if why := c.writes.refusal(name); why != "" && res.note == "" {
		res.note = why
	}
	switch {
	case c.writes.wasRefused(name) && cond == nil:
		// Never written while pending: no message (a real cluster shows no status).
	case cond != nil:
		msg = cond.Message
		if msg == "" {
			return Result{}, fmt.Errorf("workload %s is pending with an empty message", name)
		}
	case c.parked(wl):
		// SchedulingEquivalenceHashing (on by default): a workload identical in scheduling
		// terms to one already found inadmissible is parked as inadmissible on arrival and
		// never reaches the scheduler, so no status is written for it (Kueue's workload
		// controller stamps one only with UnadmittedWorkloadsExplicitStatus).
		res.note = "not evaluated: an equivalent workload is inadmissible (SchedulingEquivalenceHashing)"
	case c.waitingPodsReady && c.queued(wl):
		res.note = "not evaluated: Kueue's scheduler waits for PodsReady (blockAdmission)"
	case c.queued(wl):
		res.note = "not evaluated: queued behind " + c.headOf(wl) +
			", which Kueue retries every scheduling cycle"
	default:
		return Result{}, fmt.Errorf("workload %s has no status and is in no queue", name)
	}
	res.Message = &msg
	return res, nil
}

func (c *cluster) parked(wl *kueue.Workload) bool {
	ref := kueue.ClusterQueueReference(c.clusterQueueOf(wl))
	return slices.Contains(c.queues.DumpInadmissible()[ref], workload.Key(wl))
}

func (c *cluster) queued(wl *kueue.Workload) bool {
	ref := kueue.ClusterQueueReference(c.clusterQueueOf(wl))
	return slices.Contains(c.queues.Dump()[ref], workload.Key(wl))
}

// headOf names the workload its ClusterQueue pops first (queue order), the one every cycle
// retries while wl waits behind it.
func (c *cluster) headOf(wl *kueue.Workload) string {
	ref := kueue.ClusterQueueReference(c.clusterQueueOf(wl))
	queued := c.queues.Dump()[ref]
	for _, info := range c.queues.PendingWorkloadsInfo(ref) {
		if slices.Contains(queued, workload.Key(info.Obj)) {
			return info.Obj.Name
		}
	}
	return "the head of its ClusterQueue"
}

// wasPreempted: the Workload was evicted by preemption at some time (its eviction record
// survives re-admission, where the Evicted condition turns False).
func wasPreempted(wl *kueue.Workload) bool {
	if wl.Status.SchedulingStats == nil {
		return false
	}
	for _, e := range wl.Status.SchedulingStats.Evictions {
		if e.Reason == kueue.WorkloadEvictedByPreemption && e.Count > 0 {
			return true
		}
	}
	return false
}

// flavorsOf names each pod set's flavor; a pod set whose resources got flavors in several
// resource groups lists them joined by "," in resource-group order.
func (c *cluster) flavorsOf(adm *kueue.Admission) *orderedMap[string] {
	out := &orderedMap[string]{}
	cq := c.cqs[string(adm.ClusterQueue)]
	for _, psa := range adm.PodSetAssignments {
		var names []string
		add := func(f kueue.ResourceFlavorReference) {
			if !slices.Contains(names, string(f)) {
				names = append(names, string(f))
			}
		}
		if cq != nil {
			for _, rg := range cq.Spec.ResourceGroups {
				for _, r := range rg.CoveredResources {
					if f, ok := psa.Flavors[r]; ok {
						add(f)
						break
					}
				}
			}
		}
		for _, r := range slices.Sorted(maps.Keys(psa.Flavors)) { // any a group does not cover
			add(psa.Flavors[r])
		}
		out.set(string(psa.Name), strings.Join(names, ","))
	}
	return out
}

// placement decodes each TAS pod set's topology assignment (v1beta2's compressed form)
// with Kueue's own decoder into lowest-level domain value -> pods, summing domains that
// share a lowest-level value.
func placement(adm *kueue.Admission) *orderedMap[map[string]int32] {
	out := &orderedMap[map[string]int32]{}
	for _, psa := range adm.PodSetAssignments {
		if psa.TopologyAssignment == nil {
			continue // a flavor without TAS: kube-scheduler picks the nodes
		}
		pods := map[string]int32{}
		for d := range utiltas.InternalSeqFrom(psa.TopologyAssignment) {
			if len(d.Values) > 0 {
				pods[d.Values[len(d.Values)-1]] += d.Count
			}
		}
		out.set(string(psa.Name), pods)
	}
	return out
}
