package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
		case "delete-workload", "delete-usage", "cordon", "uncordon", "delete-node":
			target = &s.Name
		case "add-node":
			s.Node = &NodeSpec{}
			target = s.Node
		case "add-usage":
			s.Usage = &UsageSpec{}
			target = s.Usage
		case "submit":
			s.Workload = &WorkloadSpec{}
			target = s.Workload
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
// decision to retry inadmissible workloads: the TAS flavor controller on any node change
// of a flavor's node, the non-TAS pod controller when a pod's deletion frees capacity, the
// workload controller when a workload is deleted. A new pod (add-usage) retries nothing.
func (c *cluster) applyStep(ctx context.Context, sc *Scenario, st *StepSpec, outcome *orderedMap[Result],
	timeout time.Duration) error {
	switch st.Action {
	case "submit":
		return c.submitSpec(ctx, sc, st.Workload, outcome, timeout)
	case "delete-workload":
		return c.deleteWorkload(ctx, st.Name, outcome, timeout)
	case "add-usage":
		c.addUsage(fmt.Sprintf("step-usage-%d", len(c.usagePods)), st.Usage)
		return nil
	case "delete-usage":
		keys, ok := c.usagePods[st.Name]
		if !ok {
			return fmt.Errorf("delete-usage: no usage named %q", st.Name)
		}
		delete(c.usagePods, st.Name)
		freed := false
		for _, k := range keys {
			freed = c.cache.TASCache().DeletePodByKey(k, c.log) != "" || freed
		}
		if freed && c.nodeInFlavor(c.usageNode[st.Name]) {
			return c.retryInadmissible(ctx, timeout)
		}
		return nil
	case "cordon", "uncordon":
		n, ok := c.nodes[st.Name]
		if !ok {
			return fmt.Errorf("%s: no node named %q", st.Action, st.Name)
		}
		n.Unschedulable = st.Action == "cordon"
		c.cache.TASCache().SyncNode(buildNode(n))
	case "add-node":
		c.nodes[st.Node.Name] = st.Node
		c.cache.TASCache().SyncNode(buildNode(st.Node))
		st.Name = st.Node.Name
	case "delete-node":
		if _, ok := c.nodes[st.Name]; !ok {
			return fmt.Errorf("delete-node: no node named %q", st.Name)
		}
		c.cache.TASCache().DeleteNodeByName(st.Name)
	default:
		return fmt.Errorf("unknown step action %q", st.Action)
	}
	// Node changes: Kueue's TAS ResourceFlavor controller retries the ClusterQueues of the
	// flavors the node belongs to.
	if c.nodeInFlavor(st.Name) {
		if err := c.retryInadmissible(ctx, timeout); err != nil {
			return err
		}
	}
	if st.Action == "delete-node" {
		delete(c.nodes, st.Name)
	}
	return nil
}

func (c *cluster) nodeInFlavor(name string) bool {
	n, ok := c.nodes[name]
	if !ok {
		return false
	}
	return utiltas.NodeMatchesFlavor(buildNode(n).Labels, c.flavor.Spec.NodeLabels, c.levels)
}

// deleteWorkload does what Kueue's workload controller does on a Workload delete event.
func (c *cluster) deleteWorkload(ctx context.Context, name string, outcome *orderedMap[Result],
	timeout time.Duration) error {
	wl := &kueue.Workload{}
	key := client.ObjectKey{Namespace: namespace, Name: name}
	if err := c.client.Get(ctx, key, wl); err != nil {
		if _, rejected := outcome.values[name]; rejected {
			outcome.delete(name) // refused by the webhook: there is nothing to delete
			return nil
		}
		return fmt.Errorf("delete-workload %s: %w", name, err)
	}
	if err := c.client.Delete(ctx, wl); err != nil {
		return fmt.Errorf("delete-workload %s: %w", name, err)
	}
	wlKey := workload.Key(wl)
	c.queues.QueueAssociatedInadmissibleWorkloadsAfter(ctx, wlKey, func() {
		_ = c.cache.DeleteWorkload(c.log, wlKey)
	})
	c.queues.DeleteAndForgetWorkload(c.log, wlKey)
	outcome.delete(name)
	delete(c.hashes, name)
	return c.settleRequeued(ctx, timeout)
}

// retryInadmissible asks the queue manager to retry the ClusterQueue's inadmissible
// workloads (qcache.NotifyRetryInadmissible, as Kueue's controllers do) and waits until
// the scheduler has gone through them.
func (c *cluster) retryInadmissible(ctx context.Context, timeout time.Duration) error {
	qcache.NotifyRetryInadmissible(c.queues, sets.New[kueue.ClusterQueueReference](clusterQueueName))
	return c.settleRequeued(ctx, timeout)
}

// settleRequeued moves the notified inadmissible workloads back to the queue and waits for
// each to be admitted or found inadmissible again. A workload that the queue manager parks
// without a scheduling cycle, because an equivalent one (same scheduling hash) failed
// just before it, is done as well.
func (c *cluster) settleRequeued(ctx context.Context, timeout time.Duration) error {
	waiting := sets.New[string]()
	for _, ref := range c.queues.DumpInadmissible()[clusterQueueName] {
		waiting.Insert(nameOf(ref))
	}
	if c.requeuer.ProcessRequeues(ctx) == 0 {
		return nil
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for waiting.Len() > 0 {
		s, ok := c.rec.next(timer.C)
		switch {
		case !ok:
			return fmt.Errorf("retrying pending workloads: no word from the scheduler on %v within %s",
				sets.List(waiting), timeout)
		case s.panicked != "":
			return &kueuePanic{msg: s.panicked}
		case !waiting.Has(s.workload):
			continue
		}
		waiting.Delete(s.workload)
		if s.admitted {
			continue
		}
		parked := sets.New[string]()
		for _, ref := range c.queues.DumpInadmissible()[clusterQueueName] {
			parked.Insert(nameOf(ref))
		}
		for w := range waiting {
			if parked.Has(w) && c.hashes[w] == c.hashes[s.workload] {
				waiting.Delete(w)
			}
		}
	}
	return nil
}

// nameOf turns a workload.Reference ("namespace/name") into the workload's name.
func nameOf(ref workload.Reference) string {
	s := string(ref)
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '/' {
			return s[i+1:]
		}
	}
	return s
}

// refresh re-reads every workload still in the outcome: a retry may have admitted it or
// changed its pending message.
func (c *cluster) refresh(ctx context.Context, outcome *orderedMap[Result]) error {
	for _, name := range outcome.keys {
		prev := outcome.values[name]
		if prev.Rejected || prev.Admitted {
			continue
		}
		res, err := c.read(ctx, name, settled{workload: name, parked: prev.note != ""})
		if err != nil {
			return err
		}
		outcome.set(name, res)
	}
	return nil
}
