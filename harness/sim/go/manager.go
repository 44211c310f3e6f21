package main

import (
	"fmt"
	"reflect"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	configapi "sigs.k8s.io/kueue/apis/config/v1beta2"
	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
	schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/controller/tas"
)

// tasNodeController is the name Kueue v0.19.2 gives its TAS node failure controller
// (pkg/controller/tas/node_controller.go: SetupWithManager, Named("tas_node_controller")).
const tasNodeController = "tas_node_controller"

// simManager is the controller-runtime Manager Kueue's TAS controllers are set up with:
// tas.SetupControllers (Kueue's own entry point; the reconcilers' constructors are not
// exported) builds them over the sim's fake client, and Add keeps each controller,
// unstarted, by name. The driver then calls a controller's Reconcile itself, between two
// scheduling cycles, instead of from informer events. The setup calls only the methods
// defined here; any other method of the embedded (nil) Manager would panic, which would
// name the one a new Kueue version needs.
type simManager struct {
	manager.Manager
	client      client.Client
	log         logr.Logger
	controllers map[string]reconcile.Reconciler
}

func (m *simManager) GetClient() client.Client   { return m.client }
func (m *simManager) GetScheme() *runtime.Scheme { return scheme }
func (m *simManager) GetCache() cache.Cache      { return nil } // sources are never started
func (m *simManager) GetLogger() logr.Logger     { return m.log }

// GetControllerOptions: every scenario builds its controllers anew under the same names,
// which controller-runtime refuses unless name validation is skipped.
func (m *simManager) GetControllerOptions() config.Controller {
	return config.Controller{SkipNameValidation: ptr.To(true)}
}

func (m *simManager) Add(r manager.Runnable) error {
	rec, ok := r.(reconcile.Reconciler)
	if !ok {
		return nil // a runnable that is not a controller (the non-TAS usage requeuer)
	}
	// controller-runtime's controller keeps its name in an exported field of an internal type.
	v := reflect.ValueOf(r)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() == reflect.Struct {
		if name := v.FieldByName("Name"); name.IsValid() && name.Kind() == reflect.String {
			m.controllers[name.String()] = rec
		}
	}
	return nil
}

// tasNodeReconciler builds Kueue's TAS controllers with tas.SetupControllers and returns
// its node failure controller's Reconcile.
func tasNodeReconciler(c client.Client, queues *qcache.Manager, cache *schdcache.Cache,
	log logr.Logger) (reconcile.Reconciler, error) {
	mgr := &simManager{client: c, log: log, controllers: map[string]reconcile.Reconciler{}}
	if name, err := tas.SetupControllers(mgr, queues, cache, &configapi.Configuration{}, nil); err != nil {
		return nil, fmt.Errorf("setting up Kueue's TAS controller %s: %w", name, err)
	}
	rec, ok := mgr.controllers[tasNodeController]
	if !ok {
		return nil, fmt.Errorf("Kueue's TAS controllers include no %s", tasNodeController)
	}
	return rec, nil
}
