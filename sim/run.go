package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/go-logr/logr"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
	schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/scheduler"
	preemptexpectations "sigs.k8s.io/kueue/pkg/scheduler/preemption/expectations"
	utiltas "sigs.k8s.io/kueue/pkg/util/tas"
	"sigs.k8s.io/kueue/pkg/workload"
)

// cluster is one scenario's Kueue: fresh caches, queues, fake API server and a running
// scheduler loop. Nothing is shared between scenarios except Kueue's feature gates.
type cluster struct {
	client   client.Client
	cache    *schdcache.Cache
	queues   *qcache.Manager
	requeuer interface{ ProcessRequeues(context.Context) int }
	rec      *recorder
	cancel   context.CancelFunc
	log      logr.Logger

	flavor    *kueue.ResourceFlavor
	levels    []string
	nodes     map[string]*NodeSpec
	usagePods map[string][]client.ObjectKey // usage name -> its pods
	usageNode map[string]string             // usage name -> node
	hashes    map[string]workload.EquivalenceHash
	epoch     time.Time // creation time of the first workload
	submitted int       // workloads created so far
	// stuck names a workload whose admission a real API server would refuse (see read);
	// Kueue retries it at the head of the queue every cycle, so nothing behind it is popped.
	stuck string
}

// startCluster builds the objects of the scenario and feeds them to Kueue the way its
// controllers would (nodes and non-TAS pods to the TAS cache; flavor, topology,
// ClusterQueue and LocalQueue to the cache and queue manager), then starts the
// scheduler loop with scheduler.Start, Kueue's exported entry point.
func startCluster(parent context.Context, sc *Scenario, log logr.Logger) (*cluster, error) {
	ctx, cancel := context.WithCancel(ctrl.LoggerInto(parent, log))
	cl, err := newFakeClient()
	if err != nil {
		cancel()
		return nil, err
	}
	c := &cluster{
		client: cl, rec: newRecorder(), cancel: cancel, log: log,
		nodes: map[string]*NodeSpec{}, usagePods: map[string][]client.ObjectKey{},
		usageNode: map[string]string{}, hashes: map[string]workload.EquivalenceHash{},
		epoch: time.Now().Truncate(time.Second),
	}
	if err := c.setup(ctx, sc); err != nil {
		cancel()
		return nil, err
	}
	current.Store(c.rec)
	expectations := preemptexpectations.New()
	// NewManagerForUnitTests gives a manager whose inadmissible-workload requeuer only
	// records requests: a pending workload stays pending instead of being retried on a
	// timer, which the one-at-a-time contract asks for and keeps runs deterministic.
	// Its requeuer also lets steps retry inadmissible workloads exactly when asked to.
	c.queues, c.requeuer = qcache.NewManagerForUnitTestsWithRequeuer(c.client, c.cache,
		qcache.WithPreemptionExpectations(expectations))
	if err := c.addQueues(ctx, sc); err != nil {
		cancel()
		return nil, err
	}
	s := scheduler.New(c.queues, c.cache, c.client, c.rec, scheduler.WithPreemptionExpectations(expectations))
	go c.queues.CleanUpOnContext(ctx) // wakes the loop's blocking Heads() on cancel
	if err := s.Start(ctx); err != nil {
		cancel()
		return nil, err
	}
	return c, nil
}

func (c *cluster) setup(ctx context.Context, sc *Scenario) error {
	c.cache = schdcache.New(c.client)
	tas := c.cache.TASCache()
	for i := range sc.Nodes {
		c.nodes[sc.Nodes[i].Name] = &sc.Nodes[i]
		tas.SyncNode(buildNode(&sc.Nodes[i]))
	}
	for i := range sc.Usage {
		c.addUsage(fmt.Sprintf("usage-%d", i), &sc.Usage[i])
	}
	c.flavor, c.levels = buildFlavor(sc), sc.Topology.Levels
	c.cache.AddOrUpdateResourceFlavor(c.log, c.flavor)
	c.cache.AddOrUpdateTopology(c.log, buildTopology(sc))
	cq := buildClusterQueue(sc)
	if err := c.client.Create(ctx, cq); err != nil {
		return fmt.Errorf("creating ClusterQueue: %w", err)
	}
	lq := buildLocalQueue()
	if err := c.client.Create(ctx, lq); err != nil {
		return fmt.Errorf("creating LocalQueue: %w", err)
	}
	// The cache picks up the LocalQueue from the client when the ClusterQueue arrives.
	if err := c.cache.AddClusterQueue(ctx, cq); err != nil {
		return fmt.Errorf("adding ClusterQueue to the cache: %w", err)
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
	cq := &kueue.ClusterQueue{}
	if err := c.client.Get(ctx, client.ObjectKey{Name: clusterQueueName}, cq); err != nil {
		return err
	}
	if err := c.queues.AddClusterQueue(ctx, cq); err != nil {
		return fmt.Errorf("adding ClusterQueue to the queue manager: %w", err)
	}
	if !c.cache.ClusterQueueActive(clusterQueueName) {
		_, reason, msg := c.cache.ClusterQueueReadiness(clusterQueueName)
		return fmt.Errorf("ClusterQueue is not active: %s: %s", reason, msg)
	}
	return c.queues.AddLocalQueue(ctx, buildLocalQueue())
}

func (c *cluster) stop() {
	current.CompareAndSwap(c.rec, nil)
	c.cancel()
}

// submit creates the workload and waits until the scheduler has settled it.
func (c *cluster) submit(ctx context.Context, wl *kueue.Workload, timeout time.Duration) (Result, error) {
	if c.stuck != "" {
		empty := ""
		return Result{Message: &empty, note: "not evaluated: queued behind " + c.stuck +
			", which Kueue retries forever"}, nil
	}
	// Creation timestamps one second apart: Kueue orders pending workloads by creation time
	// (seconds in the API), and "submitted in this order" must not depend on UID tie-breaks.
	wl.CreationTimestamp = metav1.NewTime(c.epoch.Add(time.Duration(c.submitted) * time.Second))
	c.submitted++
	if err := c.client.Create(ctx, wl); err != nil {
		return Result{}, fmt.Errorf("creating workload %s: %w", wl.Name, err)
	}
	// Kueue's controllers see the object as the API server stores it (empty maps and lists
	// dropped by JSON), and the scheduling-equivalence hash is computed from that form.
	stored := &kueue.Workload{}
	if err := c.client.Get(ctx, client.ObjectKeyFromObject(wl), stored); err != nil {
		return Result{}, fmt.Errorf("reading back workload %s: %w", wl.Name, err)
	}
	wl = stored
	// What Kueue's workload controller does with a new Workload.
	workload.AdjustResources(ctx, c.client, wl)
	info := workload.NewInfo(wl)
	info.UpdateSchedulingHash(c.log)
	c.hashes[wl.Name] = info.SchedulingHash
	if err := c.queues.AddOrUpdateWorkload(c.log, wl); err != nil {
		return Result{}, fmt.Errorf("queueing workload %s: %w", wl.Name, err)
	}
	// SchedulingEquivalenceHashing (on by default): a workload identical in scheduling terms
	// to one already found inadmissible is parked as inadmissible on arrival and never
	// reaches the scheduler, so no status is written for it (Kueue's workload controller
	// stamps one only with UnadmittedWorkloadsExplicitStatus). Report it pending as is.
	if _, parked := c.queues.GetNoFitReason(wl); parked {
		return c.read(ctx, wl.Name, settled{workload: wl.Name, parked: true})
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		s, ok := c.rec.next(timer.C)
		switch {
		case !ok:
			return Result{}, fmt.Errorf("workload %s: no admission or pending status from the scheduler within %s", wl.Name, timeout)
		case s.panicked != "":
			return Result{}, &kueuePanic{msg: s.panicked}
		case s.workload == wl.Name:
			return c.read(ctx, wl.Name, s)
		}
	}
}

// dumpStatus prints every settled Workload's status to stderr (flag -dump-status).
var dumpStatus bool

type kueuePanic struct{ msg string }

func (p *kueuePanic) Error() string { return "Kueue panicked: " + p.msg }

// read turns the Workload's status into the oracle's outcome for it.
func (c *cluster) read(ctx context.Context, name string, s settled) (Result, error) {
	wl := &kueue.Workload{}
	if err := c.client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, wl); err != nil {
		return Result{}, fmt.Errorf("reading workload %s: %w", name, err)
	}
	if dumpStatus {
		if b, err := json.Marshal(wl.Status); err == nil {
			fmt.Fprintf(os.Stderr, "workload %s status: %s\n", name, b)
		}
	}
	if wl.Status.Admission != nil {
		if emptyTopologyAssignment(wl.Status.Admission) {
			// The fake client stores what a real API server refuses: a topologyAssignment
			// without slices (CRD validation: "slices: Required value"). On a cluster the
			// write fails, no status is stored and Kueue retries the workload every cycle.
			c.stuck = name
			empty := ""
			return Result{Message: &empty, note: "admission with an empty topology assignment: " +
				"a real API server refuses it, so the workload never gets a status"}, nil
		}
		return Result{Admitted: true, Placement: placement(wl.Status.Admission)}, nil
	}
	if s.admitted {
		return Result{}, errors.New("workload " + name + ": quota reserved but no admission in its status")
	}
	msg, res := s.message, Result{}
	cond := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved)
	if cond != nil && cond.Status != metav1.ConditionTrue {
		msg = cond.Message
	} else if s.parked {
		res.note = "not evaluated: an equivalent workload is inadmissible (SchedulingEquivalenceHashing)"
	}
	res.Message = &msg
	return res, nil
}

// emptyTopologyAssignment reports a TAS pod set assignment that holds no domain at all.
func emptyTopologyAssignment(adm *kueue.Admission) bool {
	for _, psa := range adm.PodSetAssignments {
		if psa.TopologyAssignment != nil && len(psa.TopologyAssignment.Slices) == 0 {
			return true
		}
	}
	return false
}

// placement decodes each pod set's topology assignment (v1beta2's compressed form) with
// Kueue's own decoder into lowest-level domain value -> pods, summing domains that share
// a lowest-level value.
func placement(adm *kueue.Admission) *orderedMap[map[string]int32] {
	out := &orderedMap[map[string]int32]{}
	for _, psa := range adm.PodSetAssignments {
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
