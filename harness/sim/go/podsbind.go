package main

import (
	"k8s.io/utils/ptr"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	utiltas "sigs.k8s.io/kueue/pkg/util/tas"
)

// bindableNodes: workload -> pod set -> TAS flavor -> node -> how many of its pods
// kube-scheduler could bind there (nodes that take none are left out). The rule is the fit
// model's (harness/fit/bindable.py), computed in Python from the scenario as it starts (each
// node for the pod set alone), so both engines decide alike which pods never run.
type bindableNodes map[string]map[string]map[string]map[string]int32

// podsCanBind: kube-scheduler finds nodes for all the pods of every domain Kueue assigned
// the workload's TAS pod sets. Kueue places by a domain's summed free capacity and checks
// taints and selectors only at the hostname level (tas_flavor_snapshot.go
// findTopologyAssignment), so a domain may hold fewer pods a node can run than Kueue put
// there; those pods stay Pending, the job reconciler never writes PodsReady=True
// (generatePodsReadyCondition), and blockAdmission keeps waiting. A workload the table
// does not list (submitted in a session) counts as bindable, unless its topology assignment
// leaves pods without a domain (podsAllAssigned).
func (c *cluster) podsCanBind(wl *kueue.Workload) bool {
	if wl.Status.Admission == nil {
		return true
	}
	if !podsAllAssigned(wl) {
		return false
	}
	table, ok := c.bindable[wl.Name]
	if !ok {
		return true
	}
	for i := range wl.Status.Admission.PodSetAssignments {
		psa := &wl.Status.Admission.PodSetAssignments[i]
		ta := psa.TopologyAssignment
		if ta == nil || len(ta.Levels) == 0 {
			continue
		}
		for _, f := range psa.Flavors {
			nodes, listed := table[string(psa.Name)][string(f)]
			if !listed {
				continue
			}
			for d := range utiltas.InternalSeqFrom(ta) {
				if c.podsIn(nodes, ta.Levels, d.Values) < d.Count {
					return false
				}
			}
		}
	}
	return true
}

// podsAllAssigned: Kueue's topology assignment of every TAS pod set holds all its pods. It
// may hold fewer (a slice size that does not divide the count); the TAS ungater releases
// a pod only into a domain of the assignment (pkg/controller/tas/topology_ungater.go), so
// the rest stay scheduling-gated and the job reconciler never writes PodsReady=True, which
// keeps blockAdmission waiting (the fit model's harness/fit/binding.py; the embedded
// cluster, fuzz2-4114-6: 6 of 7 workers released, the next workload held).
func podsAllAssigned(wl *kueue.Workload) bool {
	for i := range wl.Status.Admission.PodSetAssignments {
		psa := &wl.Status.Admission.PodSetAssignments[i]
		if psa.TopologyAssignment == nil {
			continue
		}
		var assigned int32
		for d := range utiltas.InternalSeqFrom(psa.TopologyAssignment) {
			assigned += d.Count
		}
		if assigned < podSetCount(wl, psa) {
			return false
		}
	}
	return true
}

// podSetCount: the pods the admission runs for a pod set (its count, or the partial count).
func podSetCount(wl *kueue.Workload, psa *kueue.PodSetAssignment) int32 {
	for i := range wl.Spec.PodSets {
		if wl.Spec.PodSets[i].Name == psa.Name {
			return ptr.Deref(psa.Count, wl.Spec.PodSets[i].Count)
		}
	}
	return 0
}

// podsIn: how many pods the nodes carrying the domain's value of every level take.
func (c *cluster) podsIn(nodes map[string]int32, levels, values []string) int32 {
	var total int32
	for name, pods := range nodes {
		n, ok := c.nodes[name]
		if !ok {
			continue
		}
		match := true
		for i, level := range levels {
			if n.Labels[level] != values[i] {
				match = false
				break
			}
		}
		if match {
			total += pods
		}
	}
	return total
}

// forgetBindable drops the table once a step changes the nodes or the usage it was computed
// from: later admissions count as bindable again (the earlier behaviour); a workload already
// held stays held.
func (c *cluster) forgetBindable(action string) {
	switch action {
	case "node-not-ready", "node-ready", "taint-node", "untaint-node", "cordon", "uncordon",
		"add-node", "delete-node", "add-usage", "delete-usage":
		c.bindable = nil
	}
}
