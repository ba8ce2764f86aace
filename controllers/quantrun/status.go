package quantrun

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

// StatusChange is a transition the controller makes.
type StatusChange struct {
	Phase   kquantv1alpha1.RunPhase
	Reason  string
	Message string
	// BindTime, when nil, is the run's own (BindTime).
	BindTime *metav1.Time
	// CompletionTime is set when failing the run.
	CompletionTime *metav1.Time
}

// controllerStatus is the subset of QuantRunStatus the controller applies.
// Fields it leaves out are not claimed, so the agent's stay the agent's.
type controllerStatus struct {
	Phase          kquantv1alpha1.RunPhase `json:"phase,omitempty"`
	BindTime       *metav1.Time            `json:"bindTime,omitempty"`
	CompletionTime *metav1.Time            `json:"completionTime,omitempty"`
	Reason         string                  `json:"reason,omitempty"`
	Message        string                  `json:"message,omitempty"`
}

// ApplyStatus writes change to run's status with server-side apply, only if the
// run is still at run.ResourceVersion (a conflict error otherwise). bindTime is
// carried over from run (its status, else its bind-time annotation), because
// server-side apply would otherwise remove a field the manager applied before
// and left out now.
func ApplyStatus(ctx context.Context, c client.Client, run *kquantv1alpha1.QuantRun, change StatusChange) error {
	st := controllerStatus{
		Phase: change.Phase, BindTime: change.BindTime, CompletionTime: change.CompletionTime,
		Reason: change.Reason, Message: change.Message,
	}
	if st.BindTime == nil {
		st.BindTime = run.BindTime()
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
	if err != nil {
		return fmt.Errorf("converting status of run %s: %w", run.Name, err)
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"status": u}}
	obj.SetAPIVersion(kquantv1alpha1.GroupVersion.String())
	obj.SetKind("QuantRun")
	obj.SetName(run.Name)
	obj.SetNamespace(run.Namespace)
	obj.SetResourceVersion(run.ResourceVersion)
	if err := c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying status %s of run %s: %w", change.Phase, run.Name, err)
	}
	run.Status.Phase = change.Phase
	run.Status.BindTime = st.BindTime
	if change.CompletionTime != nil {
		run.Status.CompletionTime = change.CompletionTime
	}
	run.Status.Reason, run.Status.Message = change.Reason, change.Message
	run.ResourceVersion = obj.GetResourceVersion()
	return nil
}
