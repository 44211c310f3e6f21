package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/workload"
)

// workloadSig is one Workload's part of the state a scheduling cycle starts from
// (cluster.signature): its conditions and admission, and its pending message if its
// QuotaReserved condition is not True.
type workloadSig struct {
	line    string
	id      uint64 // the line's number (workloadSigs.ids)
	message string
	pending bool
}

// workloadSigs keeps every Workload's part, re-reading only the Workloads written since the
// last cycle (written.go): listing every Workload before each cycle made a long stream
// quadratic in its workloads.
type workloadSigs struct {
	byKey  map[client.ObjectKey]workloadSig
	primed bool
	order  []client.ObjectKey // byKey's keys in list order; nil when a key came or went
	// ids numbers every line a part had since compact: a cycle's state holds the numbers,
	// not the lines (equal lines, equal numbers; a number is never reused).
	ids  map[string]uint64
	next uint64
}

// numbered gives the part its line's number.
func (s *workloadSigs) numbered(part workloadSig) workloadSig {
	if s.ids == nil {
		s.ids = map[string]uint64{}
	}
	id, ok := s.ids[part.line]
	if !ok {
		id = s.next
		s.next++
		s.ids[part.line] = id
	}
	part.id = id
	return part
}

// compact forgets the numbers of lines no part has now, once they outnumber the parts:
// called when a settle starts, as states are compared within one settle only.
func (s *workloadSigs) compact() {
	if len(s.ids) <= 2*len(s.byKey)+1024 {
		return
	}
	kept := make(map[string]uint64, len(s.byKey))
	for _, part := range s.byKey {
		kept[part.line] = part.id
	}
	s.ids = kept
}

// workloadParts returns every stored Workload's part, in the API server's list order
// (namespace, then name).
func (c *cluster) workloadParts(ctx context.Context) ([]workloadSig, []string, error) {
	s := &c.sigs
	written := c.writes.takeMarked(forSignature)
	if !s.primed || written.all {
		var list kueue.WorkloadList
		if err := c.client.List(ctx, &list); err != nil {
			return nil, nil, err
		}
		s.byKey = make(map[client.ObjectKey]workloadSig, len(list.Items))
		for i := range list.Items {
			s.byKey[client.ObjectKeyFromObject(&list.Items[i])] = s.numbered(sigOf(&list.Items[i]))
		}
		s.primed, s.order = true, nil
	} else {
		for name := range written.names {
			key := c.key(name)
			wl := &kueue.Workload{}
			switch err := c.client.Get(ctx, key, wl); {
			case apierrors.IsNotFound(err):
				if _, known := s.byKey[key]; known {
					delete(s.byKey, key)
					s.order = nil
				}
			case err != nil:
				return nil, nil, err
			default:
				if _, known := s.byKey[key]; !known {
					s.order = nil
				}
				s.byKey[key] = s.numbered(sigOf(wl))
			}
		}
	}
	if s.order == nil {
		s.order = make([]client.ObjectKey, 0, len(s.byKey))
		for k := range s.byKey {
			s.order = append(s.order, k)
		}
		slices.SortFunc(s.order, func(a, b client.ObjectKey) int {
			if d := strings.Compare(a.Namespace, b.Namespace); d != 0 {
				return d
			}
			return strings.Compare(a.Name, b.Name)
		})
	}
	keys := s.order
	parts := make([]workloadSig, len(keys))
	names := make([]string, len(keys))
	for i, k := range keys {
		parts[i], names[i] = s.byKey[k], k.Name
	}
	return parts, names, nil
}

func sigOf(wl *kueue.Workload) workloadSig {
	var b strings.Builder
	fmt.Fprintf(&b, "wl %s", wl.Name)
	for _, cond := range wl.Status.Conditions {
		fmt.Fprintf(&b, " %s=%s/%s/%q", cond.Type, cond.Status, cond.Reason, cond.Message)
	}
	if wl.Status.Admission != nil {
		adm, _ := json.Marshal(wl.Status.Admission)
		b.Write(adm)
	}
	b.WriteByte('\n')
	out := workloadSig{line: b.String()}
	if cond := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadQuotaReserved); cond != nil &&
		cond.Status != metav1.ConditionTrue {
		out.message, out.pending = cond.Message, true
	}
	return out
}

// queuedInfos is the queue manager's Info of each workload in a ClusterQueue's heap (refs),
// which is all the signature prints the flavor scans of: read from the heap itself where
// Kueue has it exported (heapInfos), else from the queue manager's pending workloads
// (PendingWorkloadsInfo, which sorts every pending workload of the ClusterQueue first).
func (c *cluster) queuedInfos(ref kueue.ClusterQueueReference, refs []workload.Reference) []*workload.Info {
	if len(refs) == 0 {
		return nil
	}
	for _, lq := range sortedKeys(c.lqCQ) {
		if c.lqCQ[lq] != string(ref) {
			continue
		}
		namespace, name, _ := strings.Cut(lq, "/")
		if infos, ok := heapInfos(c.queues, ref, namespace, name, refs); ok {
			return infos
		}
	}
	return c.queues.PendingWorkloadsInfo(ref)
}
