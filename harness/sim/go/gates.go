package main

import (
	"fmt"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
)

// gateSetter applies a scenario's feature gates to Kueue's process-wide gate and puts
// back the defaults of whatever the previous scenario changed, so scenarios in one
// batch do not see each other's gates.
type gateSetter struct {
	defaults map[string]bool // gate -> default, for every gate ever changed
}

func newGateSetter() *gateSetter { return &gateSetter{defaults: map[string]bool{}} }

func (g *gateSetter) apply(gates map[string]bool) error {
	want := make(map[string]bool, len(g.defaults)+len(gates))
	for name, def := range g.defaults {
		want[name] = def
	}
	known := utilfeature.DefaultMutableFeatureGate.GetAll()
	for name := range gates {
		// Checked first: SetFromMap keeps an unknown name in its raw map before refusing it,
		// so every later scenario's gates would be refused too.
		if _, ok := known[featuregate.Feature(name)]; !ok {
			return fmt.Errorf("feature gate %s does not exist in Kueue %s", name, kueueVersion)
		}
	}
	for name, value := range gates {
		if _, seen := g.defaults[name]; !seen {
			for f := range known {
				if string(f) == name {
					g.defaults[name] = utilfeature.DefaultFeatureGate.Enabled(f)
				}
			}
		}
		want[name] = value
	}
	if len(want) == 0 {
		return nil
	}
	return utilfeature.DefaultMutableFeatureGate.SetFromMap(want)
}
