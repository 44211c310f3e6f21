package main

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/util/sets"

	corev1 "k8s.io/api/core/v1"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
	utiltas "sigs.k8s.io/kueue/pkg/util/tas"
	"sigs.k8s.io/kueue/pkg/workload"
)

// StepSpec is one change after the workloads settled (the harness's `steps` extension):
// exactly one action key whose value is a name, a node, a usage entry or a workload.
type StepSpec struct {
	Action   string
	Name     string
	Node     *NodeSpec
	Usage    *UsageSpec
	Workload *WorkloadSpec
	Taint    *TaintStep
	Pods     *PodStep
	Check    *CheckStep
	Stop     *StopPolicyStep
}

// TaintStep is a taint-node or untaint-node step: the node and the taint (an untaint
// matches key and effect).
type TaintStep struct {
	Node string `json:"node"`
	corev1.Taint
}

// PodStep is a terminate-pods or fail-pods step: a workload's pods (those bound to Node,
// or all; at most Count), or a usage entry's.
type PodStep struct {
	Workload string `json:"workload"`
	Usage    string `json:"usage"`
	Node     string `json:"node"`
	Count    *int   `json:"count"`
}

func (s *StepSpec) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	for action, value := range raw {
		var target any
		switch action {
		case "expect":
			continue
		case "delete-workload", "delete-usage", "cordon", "uncordon", "delete-node",
			"node-not-ready", "node-ready", "pods-not-ready", "pods-ready":
			target = &s.Name
		case "taint-node", "untaint-node":
			s.Taint = &TaintStep{}
			target = s.Taint
		case "terminate-pods", "fail-pods":
			s.Pods = &PodStep{}
			target = s.Pods
		case "add-node":
			s.Node = &NodeSpec{}
			target = s.Node
		case "add-usage":
			s.Usage = &UsageSpec{}
			target = s.Usage
		case "submit":
			s.Workload = &WorkloadSpec{}
			target = s.Workload
		case "set-admission-check":
			s.Check = &CheckStep{}
			target = s.Check
		case "set-stop-policy":
			s.Stop = &StopPolicyStep{}
			target = s.Stop
		default:
			return fmt.Errorf("unknown step action %q", action)
		}
		if s.Action != "" {
			return fmt.Errorf("a step has two actions: %q and %q", s.Action, action)
		}
		s.Action = action
		if err := json.Unmarshal(value, target); err != nil {
			return fmt.Errorf("step %s: %w", action, err)
		}
	}
	if s.Action == "" {
		return fmt.Errorf("a step has no action")
	}
	return nil
}

// applyStep makes the change the way Kueue's controllers would see it, including their
// decision to retry inadmissible workloads: the TAS ResourceFlavor controller on any change
// of a node in a TAS flavor (every active ClusterQueue), the non-TAS pod controller when a
// pod's deletion frees capacity on such a node (the ClusterQueues using those flavors, and
// their cohorts), the workload controller when a workload is deleted (its ClusterQueue's
// cohort). A new pod (add-usage) retries nothing. Then Kueue runs until it comes to rest.
func (c *cluster) applyStep(ctx context.Context, sc *Scenario, st *StepSpec, outcome *orderedMap[Result]) error {
	if err := c.ensureFaultModel(ctx); err != nil {
		return err
	}
	c.forgetBindable(st.Action)
	switch st.Action {
	case "node-not-ready", "node-ready", "taint-node", "untaint-node":
		return c.faultNode(ctx, st)
	case "terminate-pods", "fail-pods":
		return c.faultPods(ctx, st)
	case "submit":
		return c.submitSpec(ctx, sc, st.Workload, outcome)
	case "set-admission-check":
		return c.setAdmissionCheck(ctx, st.Check)
	case "set-stop-policy":
		if st.Stop.ClusterQueue != "" {
			return c.setClusterQueueStopPolicy(ctx, st.Stop)
		}
		return c.setStopPolicy(ctx, st.Stop)
	case "pods-not-ready":
		if err := c.holdPodsNotReady(ctx, st.Name); err != nil {
			return err
		}
		if err := c.podsNotReady(ctx, sc, st.Name); err != nil || !c.hook.gate.on {
			return err
		}
		return c.settle(ctx) // the PodsReady=False write reaches the cache
	case "pods-ready":
		return c.releasePods(ctx, st.Name) // without blockAdmission, nothing for Kueue
	case "delete-workload":
		return c.deleteWorkload(ctx, st.Name, outcome)
	case "add-usage":
		c.addUsage(fmt.Sprintf("step-usage-%d", len(c.usagePods)), st.Usage)
		return nil
	case "delete-usage":
		if _, ok := c.usagePods[st.Name]; !ok {
			return fmt.Errorf("delete-usage: no usage named %q", st.Name)
		}
		cqs := c.freeUsage(st.Name)
		if cqs.Len() == 0 {
			return nil
		}
		return c.retryInadmissible(ctx, cqs)
	case "cordon", "uncordon":
		if _, err := c.changeNode(ctx, st.Name, func(n *NodeSpec) {
			n.Unschedulable = st.Action == "cordon"
		}); err != nil {
			return err
		}
	case "add-node":
		c.nodes[st.Node.Name] = st.Node
		c.cache.TASCache().SyncNode(buildNode(st.Node))
		st.Name = st.Node.Name
		if err := c.client.Create(ctx, buildNode(st.Node)); err != nil {
			return fmt.Errorf("add-node %s: %w", st.Name, err)
		}
		if err := c.reconcileNodes(ctx, []string{st.Name}); err != nil {
			return err
		}
	case "delete-node":
		if err := c.deleteNode(ctx, st.Name); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown step action %q", st.Action)
	}
	// Node changes: Kueue's TAS ResourceFlavor controller reconciles every TAS flavor the
	// node belongs to, and each reconcile retries every active ClusterQueue.
	inFlavor := len(c.tasFlavorsOf(st.Name)) > 0
	if st.Action == "delete-node" {
		delete(c.nodes, st.Name)
	}
	if inFlavor {
		return c.retryInadmissible(ctx, c.cache.ActiveClusterQueues())
	}
	return nil
}

// freeUsage removes a usage entry's pods from the TAS cache, as the non-TAS pod controller
// does once they are gone, and returns the ClusterQueues it retries when that frees
// capacity: those using the TAS flavors of the node.
func (c *cluster) freeUsage(name string) sets.Set[kueue.ClusterQueueReference] {
	keys := c.usagePods[name]
	delete(c.usagePods, name)
	freed := false
	for _, k := range keys {
		freed = deleteUsagePod(c.cache, k, c.log) || freed
	}
	cqs := sets.New[kueue.ClusterQueueReference]()
	if freed {
		for _, flavor := range c.tasFlavorsOf(c.usageNode[name]) {
			cqs.Insert(c.cache.ClusterQueuesUsingFlavor(flavor)...)
		}
	}
	return cqs
}

// tasFlavorsOf lists the TAS flavors a node belongs to, as Kueue's TAS controllers match
// them (utiltas.NodeMatchesFlavor over the TAS cache's flavors).
func (c *cluster) tasFlavorsOf(name string) []kueue.ResourceFlavorReference {
	n, ok := c.nodes[name]
	if !ok {
		return nil
	}
	labels := buildNode(n).Labels
	var out []kueue.ResourceFlavorReference
	for flavor, fc := range c.cache.CloneTASCache() {
		if utiltas.NodeMatchesFlavor(labels, fc.NodeLabels(), fc.TopologyLevels()) {
			out = append(out, flavor)
		}
	}
	return out
}

// deleteWorkload does what Kueue's workload controller does on a Workload delete event.
func (c *cluster) deleteWorkload(ctx context.Context, name string, outcome *orderedMap[Result]) error {
	wl := &kueue.Workload{}
	key := c.key(name)
	if err := c.client.Get(ctx, key, wl); err != nil {
		if _, known := outcome.values[name]; known {
			outcome.delete(name) // refused by the webhook: there is nothing to delete
			return nil
		}
		return fmt.Errorf("delete-workload %s: %w", name, err)
	}
	if err := c.client.Delete(ctx, wl); err != nil {
		return fmt.Errorf("delete-workload %s: %w", name, err)
	}
	// The Job goes with its Workload: its running pods are deleted; terminating ones stay.
	if err := c.stopPods(ctx, name); err != nil {
		return err
	}
	wlKey := workload.Key(wl)
	c.hook.dropSecondPass(string(wlKey))
	c.queues.QueueAssociatedInadmissibleWorkloadsAfter(ctx, wlKey, func() {
		_ = c.cache.DeleteWorkload(c.log, wlKey)
	})
	c.queues.DeleteAndForgetWorkload(c.log, wlKey)
	outcome.delete(name)
	return c.settle(ctx)
}

// retryInadmissible asks the queue manager to retry the inadmissible workloads of these
// ClusterQueues and their cohorts (qcache.NotifyRetryInadmissible, as Kueue's controllers
// do), then runs Kueue until it comes to rest.
func (c *cluster) retryInadmissible(ctx context.Context, cqs sets.Set[kueue.ClusterQueueReference]) error {
	qcache.NotifyRetryInadmissible(c.queues, cqs)
	return c.settle(ctx)
}

// refresh re-reads every workload in the outcome that exists: a later cycle may have
// admitted it, preempted it or changed its pending message.
func (c *cluster) refresh(ctx context.Context, outcome *orderedMap[Result]) error {
	if c.session != nil {
		return c.refreshWritten(ctx, outcome)
	}
	for _, name := range outcome.keys {
		prev := outcome.values[name]
		if prev.Rejected || !c.created.Has(name) {
			continue
		}
		res, err := c.read(ctx, name)
		if err != nil {
			return err
		}
		outcome.set(name, res)
	}
	return nil
}
