package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	kueueconstants "sigs.k8s.io/kueue/pkg/constants"
	tasindexer "sigs.k8s.io/kueue/pkg/controller/tas/indexer"
	"sigs.k8s.io/kueue/pkg/features"
	utiltas "sigs.k8s.io/kueue/pkg/util/tas"
)

// The fault steps (docs/scenario-extensions.md, "Faults under running workloads"), each
// done as the kubelet, the taint manager, pod GC or the Job controller would, then seen by
// Kueue's controllers: the TAS cache syncs the node, Kueue's node failure controller
// reconciles what its event handlers would queue, and a node change in a TAS flavor
// retries every active ClusterQueue (the TAS ResourceFlavor controller), as cordon does.

// changeNode applies mutate to the node and syncs it into the TAS cache (the node
// controller's event predicates call TASCache().SyncNode) and the fake client. It reports
// whether Kueue's node failure controller reconciles the change: its Update predicate
// fires when the Ready condition flips, or, with TASReplaceNodeOnNodeTaints, when the
// taints change (a cordon does neither).
func (c *cluster) changeNode(ctx context.Context, name string, mutate func(*NodeSpec)) (bool, error) {
	n, ok := c.nodes[name]
	if !ok {
		return false, fmt.Errorf("no node named %q", name)
	}
	old := buildNode(n)
	mutate(n)
	updated := buildNode(n)
	c.cache.TASCache().SyncNode(updated)
	ready := func(n *corev1.Node) bool {
		return utiltas.IsNodeStatusConditionTrue(n.Status.Conditions, corev1.NodeReady)
	}
	trigger := ready(old) != ready(updated) || features.Enabled(features.TASReplaceNodeOnNodeTaints) &&
		!equality.Semantic.DeepEqual(old.Spec.Taints, updated.Spec.Taints)
	if c.faults.on {
		if err := c.storeNode(ctx, updated); err != nil {
			return false, fmt.Errorf("node %s: %w", name, err)
		}
	}
	return trigger, nil
}

// storeNode writes the node's spec and, through its status subresource (the fake client
// gives in-tree kinds one, as the API server does), its status.
func (c *cluster) storeNode(ctx context.Context, node *corev1.Node) error {
	current := &corev1.Node{}
	if err := c.client.Get(ctx, client.ObjectKeyFromObject(node), current); err != nil {
		return err
	}
	status := node.Status.DeepCopy()
	current.Labels, current.Spec = node.Labels, *node.Spec.DeepCopy()
	if err := c.client.Update(ctx, current); err != nil {
		return err
	}
	current.Status = *status
	return c.client.Status().Update(ctx, current)
}

// faultNode is node-not-ready (the kubelet stopped: Ready Unknown, dated NodeFailureDelay
// back; its pods keep their last state), node-ready (Ready again, without the
// node-lifecycle taints), taint-node (a NoExecute taint makes the taint manager evict the
// pods that do not tolerate it) and untaint-node.
func (c *cluster) faultNode(ctx context.Context, st *StepSpec) error {
	name := st.Name
	if st.Taint != nil {
		name = st.Taint.Node
	}
	mutate := map[string]func(*NodeSpec){
		"node-not-ready": func(n *NodeSpec) {
			n.readyStatus, n.readySince = corev1.ConditionUnknown, c.notReadySince()
		},
		"node-ready": func(n *NodeSpec) {
			n.readyStatus, n.readySince = corev1.ConditionTrue, c.clock.Now()
			n.Taints = slices.DeleteFunc(slices.Clone(n.Taints), func(t corev1.Taint) bool {
				return t.Key == corev1.TaintNodeUnreachable || t.Key == corev1.TaintNodeNotReady
			})
		},
		"taint-node": func(n *NodeSpec) {
			n.Taints = append(slices.Clone(n.Taints), st.Taint.Taint)
		},
		"untaint-node": func(n *NodeSpec) {
			n.Taints = slices.DeleteFunc(slices.Clone(n.Taints), func(t corev1.Taint) bool {
				return t.Key == st.Taint.Key && t.Effect == st.Taint.Effect
			})
		},
	}[st.Action]
	trigger, err := c.changeNode(ctx, name, mutate)
	if err != nil {
		return err
	}
	var reconcile []string
	if trigger {
		reconcile = append(reconcile, name)
	}
	if st.Action == "taint-node" && st.Taint.Effect == corev1.TaintEffectNoExecute {
		evicted, err := c.taintManagerEvict(ctx, name, &st.Taint.Taint)
		if err != nil {
			return err
		}
		if evicted {
			reconcile = appendNew(reconcile, name)
		}
	}
	if err := c.reconcileNodes(ctx, reconcile); err != nil {
		return err
	}
	if err := c.syncAllPods(ctx); err != nil {
		return err
	}
	if len(c.tasFlavorsOf(name)) > 0 {
		return c.retryInadmissible(ctx, c.cache.ActiveClusterQueues())
	}
	return c.settle(ctx)
}

// taintManagerEvict is kube-controller-manager's taint manager under a new NoExecute
// taint: the pods on the node that do not tolerate it are deleted (a toleration with
// tolerationSeconds defers that past the step). Usage pods stay: the cluster runner's
// tolerate every taint (harness/runner/objects.py usage_pods), so the scenario contract's
// usage outlives a taint. It reports whether a workload pod was deleted (a pod event for
// Kueue's node controller).
func (c *cluster) taintManagerEvict(ctx context.Context, node string, taint *corev1.Taint) (bool, error) {
	var list corev1.PodList
	if err := c.client.List(ctx, &list, client.MatchingFields{tasindexer.PodNodeNameKey: node}); err != nil {
		return false, err
	}
	evicted := false
	for i := range list.Items {
		p := &list.Items[i]
		if !progressing(p) || corev1helpers.TolerationsTolerateTaint(c.log, p.Spec.Tolerations, taint, false) {
			continue
		}
		if err := c.removePod(ctx, p); err != nil {
			return false, err
		}
		evicted = true
	}
	return evicted, nil
}

// deleteNode deletes the Node; pod GC deletes the pods bound to it (a finalizer still
// holds a terminating one); Kueue's node controller sees the deletion at once.
func (c *cluster) deleteNode(ctx context.Context, name string) error {
	if _, ok := c.nodes[name]; !ok {
		return fmt.Errorf("no node named %q", name)
	}
	c.cache.TASCache().DeleteNodeByName(name)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.client.Delete(ctx, node); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("node %s: %w", name, err)
	}
	var list corev1.PodList
	if err := c.client.List(ctx, &list, client.MatchingFields{tasindexer.PodNodeNameKey: name}); err != nil {
		return err
	}
	for i := range list.Items {
		if err := client.IgnoreNotFound(c.client.Delete(ctx, &list.Items[i])); err != nil {
			return err
		}
	}
	return c.reconcileNodes(ctx, []string{name})
}

// faultPods is terminate-pods (the pods get a deletionTimestamp, a finalizer keeps them
// bound and Running; the Job controller's replacements stay gated, since the ungater
// counts terminating pods) and fail-pods (phase Failed; the Job controller recreates them
// and they go back where syncPods can bind them). The pods: the workload's running pods on
// the node (or on all), in pod-set order then by completion index, at most count. A usage
// entry's terminating pods still count as usage (kueue#10076), so nothing changes for Kueue.
func (c *cluster) faultPods(ctx context.Context, st *StepSpec) error {
	if st.Pods.Usage != "" {
		if _, ok := c.usagePods[st.Pods.Usage]; !ok {
			return fmt.Errorf("no usage named %q", st.Pods.Usage)
		}
		return nil
	}
	wl := &kueue.Workload{}
	if err := c.client.Get(ctx, c.key(st.Pods.Workload), wl); err != nil {
		return fmt.Errorf("workload %s: %w", st.Pods.Workload, err)
	}
	pods, err := c.podsOf(ctx, wl.Name)
	if err != nil {
		return err
	}
	pods = slices.DeleteFunc(pods, func(p *corev1.Pod) bool {
		return !progressing(p) || p.Spec.NodeName == "" || st.Pods.Node != "" && p.Spec.NodeName != st.Pods.Node
	})
	slices.SortStableFunc(pods, func(a, b *corev1.Pod) int {
		if d := podSetIndex(wl, a) - podSetIndex(wl, b); d != 0 {
			return d
		}
		return completionIndex(a) - completionIndex(b)
	})
	if st.Pods.Count != nil && *st.Pods.Count < len(pods) {
		pods = pods[:*st.Pods.Count]
	}
	var nodes []string
	for _, p := range pods {
		if st.Action == "terminate-pods" {
			err = c.terminatePod(ctx, p)
		} else {
			p.Status.Phase = corev1.PodFailed
			err = c.client.Status().Update(ctx, p)
		}
		if err != nil {
			return fmt.Errorf("pod %s: %w", p.Name, err)
		}
		nodes = appendNew(nodes, p.Spec.NodeName)
	}
	if st.Action == "fail-pods" {
		if err := c.syncPods(ctx, wl); err != nil {
			return err
		}
	}
	if err := c.reconcileNodes(ctx, nodes); err != nil {
		return err
	}
	return c.settle(ctx)
}

func podSetIndex(wl *kueue.Workload, p *corev1.Pod) int {
	return slices.IndexFunc(wl.Spec.PodSets, func(ps kueue.PodSet) bool {
		return string(ps.Name) == p.Labels[kueueconstants.PodSetLabel]
	})
}

func completionIndex(p *corev1.Pod) int {
	i, _ := strconv.Atoi(p.Labels[podIndexLabel])
	return i
}
