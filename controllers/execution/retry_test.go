package execution_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/controllers"
	"github.com/kquant/kquant/controllers/execution"
	"github.com/kquant/kquant/controllers/runpod"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/fakeagent"
	"github.com/kquant/kquant/test/wait"
)

// TestJobRetriesARunWhosePodFoundItsGPUBusy runs the whole manager in run-pod
// mode (SetupControllers with DevicePlugin) over one node whose agent only
// publishes its profile and Lease: the job's run is bound and gets a run pod;
// the pod's guard finds another process on the GPU (GPUInUse); the run fails
// and the job controller creates the next attempt, which gets its own run pod.
func TestJobRetriesARunWhosePodFoundItsGPUBusy(t *testing.T) {
	const leaseNS = "kquant-system"
	ctx := t.Context()
	if err := client.IgnoreAlreadyExists(env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metaName(leaseNS)})); err != nil {
		t.Fatal(err)
	}
	ns := namespace(t)
	node := "retry-node"
	profile := builders.MakeGPUNodeProfile(node).GPUs(builders.H100, 1).Ready().Obj()
	if err := env.Client.Create(ctx, &kquantv1alpha1.GPUNodeProfile{ObjectMeta: metaName(node)}); err != nil {
		t.Fatal(err)
	}
	stored := &kquantv1alpha1.GPUNodeProfile{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: node}, stored); err != nil {
		t.Fatal(err)
	}
	stored.Status = profile.Status
	if err := env.Client.Status().Update(ctx, stored); err != nil {
		t.Fatal(err)
	}
	lease := builders.MakeLease(fakeagent.LeaseName(node), leaseNS).Holder("agent").Duration(time.Hour).RenewedAt(time.Now()).Obj()
	if err := env.Client.Create(ctx, lease); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = env.Client.Delete(context.Background(), stored)
		_ = env.Client.Delete(context.Background(), lease)
	})

	mgr, err := ctrl.NewManager(env.Config, manager.Options{
		Scheme: env.Scheme, Cache: controllers.CacheOptions(leaseNS),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: new(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := controllers.SetupControllers(ctx, mgr, controllers.Options{LeaseNamespace: leaseNS, Registerer: prometheus.NewRegistry(),
		Execution: execution.Options{RunPod: runpod.Config{Allocation: runpod.AllocationDevicePlugin, Image: image}}}); err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() { cancel(); <-done })

	for _, obj := range []client.Object{builders.MakeQuantRecipe("fp8", ns).Obj(), builders.MakeQuantJob("retry", ns).Recipe("fp8").AnyGPU().BackoffLimit(2).Obj()} {
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	first := &kquantv1alpha1.QuantRun{ObjectMeta: metaName("retry-0-0")}
	first.Namespace = ns
	pod := runPod(t, first)
	setPodStatus(t, pod, corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{{
		Name: runpod.ContainerName, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 3, Message: "GPUInUse: GPU " + builders.GPUUUID(node, 0) + " is used by other processes: 4242 (compute, 40960 MiB)"}},
	}}})
	runStatus(t, first, "failed with GPUInUse", func(s *kquantv1alpha1.QuantRunStatus) bool {
		return s.Phase == kquantv1alpha1.RunPhaseFailed && s.Reason == kquantv1alpha1.RunReasonGPUInUse
	})
	second := &kquantv1alpha1.QuantRun{ObjectMeta: metaName("retry-0-1")}
	second.Namespace = ns
	got := &kquantv1alpha1.QuantRun{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(second), got); err != nil {
		t.Fatal(err)
	}
	if p := runPod(t, second); !metav1.IsControlledBy(p, got) {
		t.Errorf("second attempt's pod %s owners %+v, want run %s", p.Name, p.OwnerReferences, got.UID)
	}
	wait.For(t, timeout, "job counts the failed attempt", func() error {
		job := &kquantv1alpha1.QuantJob{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "retry"}, job); err != nil {
			return err
		}
		if job.Status.Failed != 1 || job.Status.Phase == kquantv1alpha1.JobPhaseFailed {
			return fmt.Errorf("job phase %s failed %d", job.Status.Phase, job.Status.Failed)
		}
		return nil
	})
}

func metaName(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }
