package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueconstants "sigs.k8s.io/kueue/pkg/constants"
	tasindexer "sigs.k8s.io/kueue/pkg/controller/tas/indexer"
	"sigs.k8s.io/kueue/pkg/features"
	utiltas "sigs.k8s.io/kueue/pkg/util/tas"
	"sigs.k8s.io/kueue/pkg/workload"
)

// Faults under running workloads (docs/scenario-extensions.md): Kueue's TAS node failure
// controller runs as Kueue's own code (tas.SetupControllers over the fake client, see
// manager.go), reconciling the Nodes and Pods the sim keeps in the fake client; the
// scheduler's second pass is Kueue's own, its backoff stepped on the fake clock
// (timers.go). What the sim emulates is what kubelets, kube-scheduler, the Job controller,
// the topology ungater, the taint manager and pod GC do to pods (see syncPods and the steps).

// stuckFinalizer keeps a terminating pod in the fake client, as a finalizer nobody removes
// keeps it on a cluster (the terminate-pods step).
const stuckFinalizer = "kueue-tas-harness.example.com/stuck"

// Eviction is an eviction other than by preemption during a step: the Evicted condition's
// reason and message.
type Eviction struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// faultState is what the sim tracks for faults: whether Nodes and workload Pods are kept in
// the fake client yet (from the first step on), Kueue's node failure controller, and what
// Kueue repaired during the current step.
type faultState struct {
	on      bool
	nodeRec reconcile.Reconciler
	podSeq  map[string]int // workload/pod set -> the next completion index
	// replaced: workload -> pod set -> failed node -> nodes that took its pods, this step.
	replaced map[string]map[string]map[string][]string
	evicted  map[string]*Eviction // workload -> its last eviction this step (not preemption)
}

// beginStep forgets what the last step repaired.
func (f *faultState) beginStep() {
	f.replaced = map[string]map[string]map[string][]string{}
	f.evicted = map[string]*Eviction{}
}

// ensureFaultModel puts the Nodes and the admitted workloads' Pods in the fake client and
// builds Kueue's TAS controllers, once: Kueue's node failure controller reads both. Done at
// the first step, so scenarios without steps do not pay for it; the state it creates is
// the one the scenario has reached, as if it had been kept from the start.
func (c *cluster) ensureFaultModel(ctx context.Context) error {
	if c.faults.on {
		return nil
	}
	rec, err := tasNodeReconciler(c.client, c.queues, c.cache, c.log)
	if err != nil {
		return err
	}
	c.faults.on, c.faults.nodeRec, c.faults.podSeq = true, rec, map[string]int{}
	for _, name := range sortedKeys(c.nodes) {
		if err := c.client.Create(ctx, buildNode(c.nodes[name])); err != nil {
			return fmt.Errorf("creating node %s: %w", name, err)
		}
	}
	return c.syncAllPods(ctx)
}

// running says whether the workload holds an admission its pods run under.
func running(wl *kueue.Workload) bool {
	return wl.Status.Admission != nil && workload.HasQuotaReservation(wl) &&
		!apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadEvicted)
}

// syncPods is what the Job controller, Kueue's topology ungater and kube-scheduler do for
// an admitted workload (a Job waiting for admission checks stays suspended: no pods): per
// TAS pod set whose assignment names nodes (lowest level kubernetes.io/hostname; with
// another lowest level Kueue never sees nodes fail), each assigned node gets pods until its
// count is met. Pods already there count unless they ended (Failed, Succeeded): terminating
// ones count, as for the ungater (topology_ungater.go: podsForPodSet). The ungater releases
// none onto a node the workload lists as unhealthy, and kube-scheduler binds only to a
// Ready, schedulable node whose NoSchedule/NoExecute taints the pod tolerates. A pod it
// cannot bind waits Pending under the ungater's nodeSelector, and that pod event makes
// Kueue's node failure controller reconcile the node (node_controller.go
// queueReconcileForPod: "potential stuck pending pods"), which may find the node failed for
// the workload and fail the pod; it binds once the node takes it.
func (c *cluster) syncPods(ctx context.Context, wl *kueue.Workload) error {
	if !c.faults.on || !running(wl) || !workload.IsAdmitted(wl) {
		return nil
	}
	pods, err := c.podsOf(ctx, wl.Name)
	if err != nil {
		return err
	}
	var stuck []string // nodes a new pod waits for
	for i := range wl.Status.Admission.PodSetAssignments {
		psa := &wl.Status.Admission.PodSetAssignments[i]
		ta := psa.TopologyAssignment
		if ta == nil || len(ta.Levels) == 0 || !utiltas.IsLowestLevelHostname(ta.Levels) {
			continue
		}
		ps := podSetOf(wl, psa.Name)
		if ps == nil {
			continue
		}
		have := map[string]int32{}
		waiting := map[string][]*corev1.Pod{}
		for _, p := range pods {
			if p.Labels[kueueconstants.PodSetLabel] != string(psa.Name) || ended(p) {
				continue
			}
			node := p.Spec.NodeName
			if node == "" {
				node = p.Spec.NodeSelector[corev1.LabelHostname]
				if p.DeletionTimestamp == nil {
					waiting[node] = append(waiting[node], p)
				}
			}
			have[node]++
		}
		tolerations := c.podTolerations(psa, ps)
		for d := range utiltas.InternalSeqFrom(ta) {
			node := d.Values[len(d.Values)-1]
			if workload.HasUnhealthyNode(wl, node) {
				continue
			}
			bind := c.canBind(node, tolerations)
			if bind {
				if err := c.bindWaiting(ctx, waiting[node], node); err != nil {
					return err
				}
			}
			for ; have[node] < d.Count; have[node]++ {
				pod := c.newPod(wl, ps, ta.Levels, d.Values, tolerations, bind)
				if err := c.client.Create(ctx, pod); err != nil {
					return fmt.Errorf("creating pod %s: %w", pod.Name, err)
				}
				if !bind {
					stuck = appendNew(stuck, node)
				}
			}
		}
	}
	return c.reconcileNodes(ctx, stuck)
}

// bindWaiting is kube-scheduler binding the pods that waited for the node.
func (c *cluster) bindWaiting(ctx context.Context, pods []*corev1.Pod, node string) error {
	for _, p := range pods {
		p.Spec.NodeName = node
		if err := c.client.Update(ctx, p); err != nil {
			return fmt.Errorf("binding pod %s: %w", p.Name, err)
		}
		p.Status.Phase = corev1.PodRunning
		if err := c.client.Status().Update(ctx, p); err != nil {
			return fmt.Errorf("binding pod %s: %w", p.Name, err)
		}
	}
	return nil
}

// syncAllPods runs syncPods for every workload: after a node change, the pods the Job
// controller recreated and the ungater holds may now bind.
func (c *cluster) syncAllPods(ctx context.Context) error {
	var list kueue.WorkloadList
	if err := c.client.List(ctx, &list); err != nil {
		return err
	}
	for i := range list.Items {
		if err := c.syncPods(ctx, &list.Items[i]); err != nil {
			return err
		}
	}
	return nil
}

func podSetOf(wl *kueue.Workload, name kueue.PodSetReference) *kueue.PodSet {
	for i := range wl.Spec.PodSets {
		if wl.Spec.PodSets[i].Name == name {
			return &wl.Spec.PodSets[i]
		}
	}
	return nil
}

// podTolerations are a pod's tolerations: its pod set's, plus its flavors' (Kueue adds the
// ResourceFlavor's tolerations to the pods it admits).
func (c *cluster) podTolerations(psa *kueue.PodSetAssignment, ps *kueue.PodSet) []corev1.Toleration {
	out := slices.Clone(ps.Template.Spec.Tolerations)
	for _, f := range slices.Sorted(maps.Values(psa.Flavors)) {
		if rf, ok := c.flavors[string(f)]; ok {
			out = append(out, rf.Spec.Tolerations...)
		}
	}
	return slices.CompactFunc(out, func(a, b corev1.Toleration) bool { return a.MatchToleration(&b) })
}

// newPod is one pod of the pod set released onto the domain, bound to its node (else
// Pending there): the pod template's annotations, the workload annotation Kueue's job
// integration adds, the pod set label and the ungater's nodeSelector for every level of
// the domain.
func (c *cluster) newPod(wl *kueue.Workload, ps *kueue.PodSet, levels, values []string,
	tolerations []corev1.Toleration, bound bool) *corev1.Pod {
	key := wl.Name + "/" + string(ps.Name)
	index := c.faults.podSeq[key]
	c.faults.podSeq[key] = index + 1
	name := fmt.Sprintf("%s-%s-%d", wl.Name, ps.Name, index)
	annotations := maps.Clone(ps.Template.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[kueue.WorkloadAnnotation] = wl.Name
	selector := map[string]string{}
	for i, level := range levels {
		selector[level] = values[i]
	}
	spec := *ps.Template.Spec.DeepCopy()
	spec.NodeSelector, spec.Tolerations = selector, tolerations
	phase := corev1.PodPending
	if bound {
		spec.NodeName, phase = values[len(values)-1], corev1.PodRunning
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: namespace, UID: types.UID(name), Annotations: annotations,
			Labels: map[string]string{
				kueueconstants.PodSetLabel: string(ps.Name),
				podIndexLabel:              strconv.Itoa(index),
			},
		},
		Spec:   spec,
		Status: corev1.PodStatus{Phase: phase},
	}
}

// ended: the pod's containers exited (Failed or Succeeded).
func ended(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded
}

// progressing: neither ended nor terminating.
func progressing(p *corev1.Pod) bool {
	return !ended(p) && p.DeletionTimestamp == nil
}

// podsOf lists a workload's pods, in pod-set order then by completion index.
func (c *cluster) podsOf(ctx context.Context, wl string) ([]*corev1.Pod, error) {
	var list corev1.PodList
	if err := c.client.List(ctx, &list, client.InNamespace(namespace),
		client.MatchingFields{tasindexer.WorkloadNameKey: wl}); err != nil {
		return nil, err
	}
	out := make([]*corev1.Pod, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, &list.Items[i])
	}
	return out, nil
}

// canBind: kube-scheduler could bind a pod with these tolerations to the node.
func (c *cluster) canBind(name string, tolerations []corev1.Toleration) bool {
	n, ok := c.nodes[name]
	if !ok {
		return false
	}
	node := buildNode(n)
	if node.Spec.Unschedulable || !utiltas.IsNodeStatusConditionTrue(node.Status.Conditions, corev1.NodeReady) {
		return false
	}
	for i := range node.Spec.Taints {
		t := &node.Spec.Taints[i]
		if (t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute) &&
			!corev1helpers.TolerationsTolerateTaint(c.log, tolerations, t, false) {
			return false
		}
	}
	return true
}

// nodeReady: the node exists and its kubelet reports Ready.
func (c *cluster) nodeReady(name string) bool {
	n, ok := c.nodes[name]
	return ok && utiltas.IsNodeStatusConditionTrue(buildNode(n).Status.Conditions, corev1.NodeReady)
}

// removePod deletes a pod the way its deletion ends: gone at once when its node's kubelet
// confirms it (Ready), else left terminating (no kubelet is there to confirm).
func (c *cluster) removePod(ctx context.Context, p *corev1.Pod) error {
	if p.Spec.NodeName == "" || c.nodeReady(p.Spec.NodeName) { // unbound: no kubelet involved
		return client.IgnoreNotFound(c.client.Delete(ctx, p))
	}
	return c.terminatePod(ctx, p)
}

// terminatePod leaves the pod terminating: a deletionTimestamp, held by a finalizer.
func (c *cluster) terminatePod(ctx context.Context, p *corev1.Pod) error {
	if p.DeletionTimestamp != nil {
		return nil
	}
	p.Finalizers = append(p.Finalizers, stuckFinalizer)
	if err := c.client.Update(ctx, p); err != nil {
		return fmt.Errorf("pod %s: %w", p.Name, err)
	}
	return client.IgnoreNotFound(c.client.Delete(ctx, p))
}

// stopPods is the Job controller on a suspended or deleted Job: every pod still running is
// deleted (terminating where no kubelet confirms it). Terminating and ended pods stay.
func (c *cluster) stopPods(ctx context.Context, wl string) error {
	if !c.faults.on {
		return nil
	}
	pods, err := c.podsOf(ctx, wl)
	if err != nil {
		return err
	}
	var nodes []string
	for _, p := range pods {
		if progressing(p) {
			if err := c.removePod(ctx, p); err != nil {
				return err
			}
			nodes = appendNew(nodes, p.Spec.NodeName)
		}
	}
	return c.reconcileNodes(ctx, nodes)
}

// reconcileNodes runs Kueue's node failure controller on each node, in order, as its
// event handlers would queue them (gated by TASFailedNodeReplacement, as its predicates are).
// A requeue it asks for is a timer on the fake clock.
//
// One Reconcile writes the status of each workload on the node in Go map order (it ranges
// over a sets.Set: handleUnhealthyNode, reconcileWorkloadsOnNode in
// pkg/controller/tas/node_controller.go), and the workload controller's update handler
// pre-queues each workload's second pass in the order it sees those writes, so on a cluster
// the workload written first is repaired first, alone in its scheduling cycle, and may take
// the node another one needed: random. The sim delivers one Reconcile's writes in workload
// name order so that a run is repeatable; the fit model names a stream whose outcome
// depends on that order Nondeterministic (harness/fit/faults.py).
func (c *cluster) reconcileNodes(ctx context.Context, names []string) error {
	if !c.faults.on || !features.Enabled(features.TASFailedNodeReplacement) {
		return nil
	}
	ctx = ctrl.LoggerInto(ctx, controllerLogger(c.hook, c.log))
	for _, name := range names {
		from := c.writes.count()
		res, err := c.faults.nodeRec.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: name}})
		c.writes.sortSince(from)
		if err != nil {
			return fmt.Errorf("Kueue's TAS node controller on node %s: %w", name, err)
		}
		if res.RequeueAfter > 0 {
			c.timers.AfterFunc(res.RequeueAfter, func() { _ = c.reconcileNodes(ctx, []string{name}) })
		}
	}
	return nil
}

func appendNew(list []string, s string) []string {
	if s == "" || slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// noteRepair records what a Workload status write repaired or evicted during this step:
// a second pass that moved pods off a node (the admission of a workload that stays
// admitted changes: only the second pass does that), or an eviction other than by
// preemption. Not keyed on the old status listing unhealthy nodes: before v0.19 a node
// NotReady for NodeFailureDelay is added to unhealthyNodes and, its pods still running,
// removed again by the same Reconcile (v0.18.2 node_controller.go:176-196, then
// reconcileWorkloadsOnNode -> handleHealthyNode), while the second pass works from the
// copy queued at the first write (pkg/cache/queue/manager.go:898-909) and admits over a
// status that no longer lists the node. The cluster runner reads `replaced` the same way,
// from the admission before and after the step.
func (c *cluster) noteRepair(old, new *kueue.Workload) {
	if c.faults.replaced == nil {
		c.faults.beginStep()
	}
	if cond := apimeta.FindStatusCondition(new.Status.Conditions, kueue.WorkloadEvicted); cond != nil &&
		cond.Status == metav1.ConditionTrue && !apimeta.IsStatusConditionTrue(old.Status.Conditions, kueue.WorkloadEvicted) &&
		cond.Reason != kueue.WorkloadEvictedByPreemption {
		// A deactivation's reason carries its cause ("DeactivatedDueToAdmissionCheck");
		// the schedulingStats record, which the cluster runner reads, has it apart.
		reason := cond.Reason
		if strings.HasPrefix(reason, kueue.WorkloadDeactivated+"DueTo") {
			reason = kueue.WorkloadDeactivated
		}
		// The first eviction of the step, as the cluster runner reads it (repair.py
		// new_eviction): a workload evicted by its PodsReady timeout and then deactivated
		// within one step reports the timeout.
		if _, seen := c.faults.evicted[new.Name]; !seen {
			c.faults.evicted[new.Name] = &Eviction{Reason: reason, Message: cond.Message}
		}
	}
	if old.Status.Admission == nil || new.Status.Admission == nil ||
		equality.Semantic.DeepEqual(old.Status.Admission, new.Status.Admission) {
		return
	}
	before, after := placement(old.Status.Admission), placement(new.Status.Admission)
	for _, ps := range after.keys {
		was, now := before.values[ps], after.values[ps]
		var takers []string
		for _, node := range slices.Sorted(maps.Keys(now)) {
			if now[node] > was[node] {
				takers = append(takers, node)
			}
		}
		for _, node := range slices.Sorted(maps.Keys(was)) {
			if now[node] >= was[node] || len(takers) == 0 {
				continue
			}
			byPodSet := c.faults.replaced[new.Name]
			if byPodSet == nil {
				byPodSet = map[string]map[string][]string{}
				c.faults.replaced[new.Name] = byPodSet
			}
			if byPodSet[ps] == nil {
				byPodSet[ps] = map[string][]string{}
			}
			for _, t := range takers {
				byPodSet[ps][node] = appendNew(byPodSet[ps][node], t)
			}
		}
	}
}

// replacedOf is what the workload's report says was replaced this step, pod sets in
// admission order.
func (c *cluster) replacedOf(wl *kueue.Workload) *orderedMap[map[string][]string] {
	byPodSet := c.faults.replaced[wl.Name]
	if len(byPodSet) == 0 || wl.Status.Admission == nil {
		return nil
	}
	out := &orderedMap[map[string][]string]{}
	for _, psa := range wl.Status.Admission.PodSetAssignments {
		if m, ok := byPodSet[string(psa.Name)]; ok {
			out.set(string(psa.Name), m)
		}
	}
	return out
}

// notReadySince dates a NotReady condition NodeFailureDelay (30 s) back, as the contract
// says, on both clocks: Kueue's node controller measures it with the real clock
// (newNodeReconciler sets clock.RealClock, which nothing exported changes), the rest of
// Kueue with the scenario's fake clock, which may run ahead of it.
func (c *cluster) notReadySince() time.Time {
	now := c.clock.Now()
	if wall := time.Now(); wall.Before(now) {
		now = wall
	}
	return now.Add(-31 * time.Second)
}
