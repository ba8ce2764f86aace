package executor

import (
	"context"
	"encoding/json"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kquant/kquant/api/v1alpha1"
)

// FieldManager is the agent's field manager (the same as the profile's).
const FieldManager = "kquant-agent"

// Condition reasons the agent writes.
const (
	// ReasonAgentRestarted: Restarted=True, the run was found Running under
	// a previous agent process of this node and run again from the start.
	ReasonAgentRestarted = "AgentRestarted"
	// ReasonShutdownGraceExpired: Abandoned=True, the agent was shutting
	// down and the run did not finish within the grace period.
	ReasonShutdownGraceExpired = "ShutdownGraceExpired"
	// ReasonFinishedDuringShutdown: Abandoned=False, the agent was shutting
	// down and the run finished within the grace period.
	ReasonFinishedDuringShutdown = "FinishedDuringShutdown"
)

// agentStatus holds every status field the agent owns. Server-side apply
// removes fields that a manager stops sending, so each apply carries all of
// them, not just the ones that changed.
type agentStatus struct {
	Phase          v1alpha1.RunPhase    `json:"phase,omitempty"`
	AgentID        string               `json:"agentID,omitempty"`
	BindTime       *metav1.Time         `json:"bindTime,omitempty"`
	StartTime      *metav1.Time         `json:"startTime,omitempty"`
	CompletionTime *metav1.Time         `json:"completionTime,omitempty"`
	Results        *v1alpha1.RunResults `json:"results,omitempty"`
	Message        string               `json:"message,omitempty"`
	Conditions     []metav1.Condition   `json:"conditions,omitempty"`
}

type statusApplyMeta struct {
	Name            string `json:"name"`
	Namespace       string `json:"namespace"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

type statusApply struct {
	APIVersion string          `json:"apiVersion"`
	Kind       string          `json:"kind"`
	Metadata   statusApplyMeta `json:"metadata"`
	Status     agentStatus     `json:"status"`
}

// agentConditions are the condition types the agent owns on a run.
var agentConditions = map[string]bool{
	v1alpha1.RunConditionRestarted: true,
	v1alpha1.RunConditionAbandoned: true,
}

// ownConditions returns the agent's conditions already on the run, to be
// carried into the next apply.
func ownConditions(run *v1alpha1.QuantRun) []metav1.Condition {
	var out []metav1.Condition
	for _, c := range run.Status.Conditions {
		if agentConditions[c.Type] {
			out = append(out, c)
		}
	}
	return out
}

// applyStatus applies st to the run's status subresource, with run's
// resourceVersion as a precondition: a change since the read conflicts. It
// returns the run's resourceVersion after the write.
func applyStatus(ctx context.Context, c client.Client, run *v1alpha1.QuantRun, st agentStatus) (string, error) {
	body := statusApply{
		APIVersion: v1alpha1.GroupVersion.String(),
		Kind:       "QuantRun",
		Metadata:   statusApplyMeta{Name: run.Name, Namespace: run.Namespace, ResourceVersion: run.ResourceVersion},
		Status:     st,
	}
	data, err := json.Marshal(body)
	if err != nil {
		return "", fmt.Errorf("encoding status of run %s: %w", run.Name, err)
	}
	obj := map[string]any{}
	if err := json.Unmarshal(data, &obj); err != nil {
		return "", fmt.Errorf("decoding status of run %s: %w", run.Name, err)
	}
	// The client decodes the API server's answer into u.
	u := &unstructured.Unstructured{Object: obj}
	if err := c.Status().Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return "", fmt.Errorf("applying status of run %s/%s: %w", run.Namespace, run.Name, err)
	}
	return u.GetResourceVersion(), nil
}
