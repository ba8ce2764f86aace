// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	kquantscheme "github.com/kquant/kquant/api/scheme"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/domain/quantrun"
	"github.com/kquant/kquant/domain/scheduling"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/testenv"
	"github.com/kquant/kquant/test/wait"
)

const systemNamespace = "kquant-system"

// suite is one control plane, two manager replicas and the agents the
// scenarios start.
type suite struct {
	dir, bin string
	cp       *controlPlane
	c        client.Client
	writes   *writeRecorder
	managers []*manager
}

// manager is a supervised manager replica: restarted when it exits, as its
// Deployment would (a replica that loses leadership exits on purpose).
type manager struct {
	*process
	metricsPort int
	paused      atomic.Bool
}

func newSuite(t *testing.T) *suite {
	t.Helper()
	ctrllog.SetLogger(logr.Discard())
	dir := os.Getenv("KQUANT_E2E_LOG_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	assets, err := testenv.AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	bin, certs, err := buildBinaries(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := &suite{dir: dir, bin: bin}
	s.cp = startControlPlane(t, dir, assets, certs)
	t.Logf("control plane, binaries and logs in %s", dir)
	ctx := t.Context()
	if _, err := s.cp.kubectl(ctx, nil, "apply", "--server-side", "-f", filepath.Join(testenv.RepoRoot(), "config", "crd", "bases")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.cp.kubectl(ctx, nil, "wait", "--for=condition=Established", "--timeout=60s", "-f", filepath.Join(testenv.RepoRoot(), "config", "crd", "bases")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.cp.kubectl(ctx, nil, "create", "namespace", systemNamespace); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", s.cp.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	scheme, err := kquantscheme.New()
	if err != nil {
		t.Fatal(err)
	}
	if s.c, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		t.Fatal(err)
	}
	s.writes = watchWrites(t, cfg, scheme)
	for i := range 2 {
		s.managers = append(s.managers, s.startManager(t, i))
	}
	go s.supervise(ctx)
	return s
}

func (s *suite) startManager(t *testing.T, i int) *manager {
	t.Helper()
	m := &manager{metricsPort: testenv.FreeLocalPort(t)}
	m.process = startProcess(t, s.dir, fmt.Sprintf("manager-%d", i), filepath.Join(s.bin, "manager"),
		"--kubeconfig="+s.cp.kubeconfig, "--leader-elect", "--lease-namespace="+systemNamespace,
		// No kubelet here: the simulated agents run the runs themselves.
		"--gpu-allocation=None",
		fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", m.metricsPort), "--metrics-secure=false",
		fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", testenv.FreeLocalPort(t)))
	return m
}

// supervise restarts managers that exited, unless paused.
func (s *suite) supervise(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
		for _, m := range s.managers {
			if m.exited() && !m.paused.Load() {
				_ = m.start()
			}
		}
	}
}

// leader returns the index of the replica that reports holding the leader
// Lease on its metrics endpoint, or -1.
func (s *suite) leader() int {
	for i, m := range s.managers {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", m.metricsPort))
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), `leader_election_master_status{name="kquant-manager"} 1`) {
			return i
		}
	}
	return -1
}

// startAgent starts a simulated agent on the reference backend. With no
// kubelet to run run pods, it executes the runs itself (--execution=None).
//
// The agent stops gracefully when the scenario ends, however it ends: a
// stopping agent marks its node not Ready, where a killed one would leave a
// node that looks alive until its Lease expires, and the next scenario's
// EachGPU jobs would place runs on it.
func (s *suite) startAgent(t *testing.T, node, gpus string) *process {
	t.Helper()
	p := startProcess(t, s.dir, "agent-"+node, filepath.Join(s.bin, "agent"), "--execution=None",
		"--kubeconfig="+s.cp.kubeconfig, "--node-name="+node, "--namespace="+systemNamespace,
		"--simulate="+gpus, "--backend=reference", "--log-format=text", "--shutdown-grace=5s")
	t.Cleanup(p.stop)
	return p
}

// awaitLeaseExpiryOnCleanup makes the scenario wait, when it ends, until the
// Lease of node's killed agent has expired, so that no later scenario sees
// the node as alive.
func (s *suite) awaitLeaseExpiryOnCleanup(t *testing.T, node string) {
	t.Helper()
	t.Cleanup(func() {
		// The scenario's context is already cancelled when cleanups run.
		ctx := context.WithoutCancel(t.Context())
		eventually(t, 2*time.Minute, "the Lease of "+node+"'s killed agent to expire", func() error {
			lease := &coordinationv1.Lease{}
			if err := s.c.Get(ctx, client.ObjectKey{Namespace: systemNamespace, Name: v1alpha1.AgentLeaseName(node)}, lease); err != nil {
				return err
			}
			if scheduling.LeaseFresh(lease, time.Now()) {
				return fmt.Errorf("renewed at %s", lease.Spec.RenewTime)
			}
			return nil
		})
	})
}

// namespace makes a namespace with the fp8-current-scaling recipe in it.
func (s *suite) namespace(t *testing.T, name string) string {
	t.Helper()
	ns := "e2e-" + name
	if _, err := s.cp.kubectl(t.Context(), nil, "create", "namespace", ns); err != nil {
		t.Fatal(err)
	}
	if _, err := s.cp.kubectl(t.Context(), nil, "apply", "-n", ns, "-f", repoFile("recipes", "fp8-current-scaling.yaml")); err != nil {
		t.Fatal(err)
	}
	return ns
}

// repoFile is a path inside the repository.
func repoFile(elem ...string) string {
	return filepath.Join(append([]string{testenv.RepoRoot()}, elem...)...)
}

// slowJob is a benchmark that takes seconds per run on the reference
// backend: long enough to kill something while it runs.
func slowJob(name, policy string) string {
	return builders.MakeSlowBenchmark(name, "", 40).Policy(v1alpha1.PlacementPolicy(policy)).YAML()
}

func (s *suite) apply(t *testing.T, ns, manifest string) {
	t.Helper()
	if _, err := s.cp.kubectl(t.Context(), []byte(manifest), "apply", "-n", ns, "-f", "-"); err != nil {
		t.Fatal(err)
	}
}

// eventually polls f until it returns nil.
func eventually(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	wait.For(t, timeout, what, f)
}

func (s *suite) runs(t *testing.T, ns string) []v1alpha1.QuantRun {
	t.Helper()
	list := &v1alpha1.QuantRunList{}
	// Retried: during a control-plane restart the API server is briefly away.
	eventually(t, time.Minute, "listing runs", func() error { return s.c.List(t.Context(), list, client.InNamespace(ns)) })
	return list.Items
}

// waitRunning waits until a run of ns is Running and returns it.
func (s *suite) waitRunning(t *testing.T, ns string) v1alpha1.QuantRun {
	t.Helper()
	var running v1alpha1.QuantRun
	eventually(t, 2*time.Minute, "a run Running", func() error {
		for _, r := range s.runs(t, ns) {
			if r.Status.Phase == v1alpha1.RunPhaseRunning {
				running = r
				return nil
			}
			if isTerminal(r.Status.Phase) {
				return fmt.Errorf("run %s is already %s (the workload is too fast to interrupt)", r.Name, r.Status.Phase)
			}
		}
		return fmt.Errorf("no run Running yet")
	})
	return running
}

// waitJob waits until job reaches phase.
func (s *suite) waitJob(t *testing.T, ns, name string, phase v1alpha1.JobPhase, timeout time.Duration) *v1alpha1.QuantJob {
	t.Helper()
	return wait.JobPhase(t, s.c, ns, name, phase, timeout)
}

func isTerminal(p v1alpha1.RunPhase) bool {
	return p == v1alpha1.RunPhaseSucceeded || p == v1alpha1.RunPhaseFailed
}

// checkSettled checks what must hold in ns after any fault: every run
// terminal, each job's counts add up and agree with its runs, and no run's
// outcome was written twice.
func (s *suite) checkSettled(t *testing.T, ns string) {
	t.Helper()
	runs := s.runs(t, ns)
	latest := map[string]map[int]v1alpha1.QuantRun{}
	for _, r := range runs {
		if !isTerminal(r.Status.Phase) {
			t.Errorf("run %s is %q, not terminal", r.Name, r.Status.Phase)
		}
		job, slot := r.Spec.JobRef.Name, quantrun.Slot(&r)
		if latest[job] == nil {
			latest[job] = map[int]v1alpha1.QuantRun{}
		}
		if cur, ok := latest[job][slot]; !ok || r.Spec.Attempt > cur.Spec.Attempt {
			latest[job][slot] = r
		}
	}
	jobs := &v1alpha1.QuantJobList{}
	if err := s.c.List(t.Context(), jobs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	failedAttempts, disruptedAttempts := map[string]int32{}, map[string]int32{}
	for _, r := range runs {
		switch {
		case r.Status.Phase != v1alpha1.RunPhaseFailed:
		case v1alpha1.IsRunDisruption(r.Status.Reason):
			disruptedAttempts[r.Spec.JobRef.Name]++
		default:
			failedAttempts[r.Spec.JobRef.Name]++
		}
	}
	// status.failed counts the attempts that failed on their own and
	// status.disruptions those a disruption ended, retried or not; succeeded
	// and total count slots (a slot is one unit of work and its retries).
	for _, j := range jobs.Items {
		st := j.Status
		slots := latest[j.Name]
		var succeeded, failedSlots int32
		for _, r := range slots {
			switch r.Status.Phase {
			case v1alpha1.RunPhaseSucceeded:
				succeeded++
			case v1alpha1.RunPhaseFailed:
				failedSlots++
			}
		}
		if st.Pending != 0 || st.Running != 0 || succeeded+failedSlots != st.Total || int32(len(slots)) != st.Total {
			t.Errorf("job %s counts do not add up: total %d, pending %d, running %d; runs exist for %d slots, %d succeeded and %d failed in their last attempt",
				j.Name, st.Total, st.Pending, st.Running, len(slots), succeeded, failedSlots)
		}
		if succeeded != st.Succeeded || failedAttempts[j.Name] != st.Failed || disruptedAttempts[j.Name] != st.Disruptions {
			t.Errorf("job %s: status says %d succeeded, %d failed and %d disrupted attempts, its runs say %d, %d and %d",
				j.Name, st.Succeeded, st.Failed, st.Disruptions, succeeded, failedAttempts[j.Name], disruptedAttempts[j.Name])
		}
	}
	for _, v := range s.writes.violations(ns) {
		t.Error(v)
	}
}

// writeRecorder watches every QuantRun and remembers the first terminal
// outcome it saw for each (phase, completionTime, agentID, reason, results).
// A run's outcome is written once when every later version it sees carries
// the same outcome. A watch may skip intermediate versions (it relists after
// a reconnect), but a second write of an outcome changes completionTime (or
// the results, agent or phase) and stays visible in the latest version, so a
// skipped version cannot hide one. Metadata-only changes (labels,
// finalizers, deletion) do not count.
type writeRecorder struct {
	mu    sync.Mutex
	first map[string]outcome
	bad   map[string][]string
}

type outcome struct {
	Phase          v1alpha1.RunPhase
	CompletionTime string
	AgentID        string
	Reason         string
	Results        *v1alpha1.RunResults
}

func watchWrites(t *testing.T, cfg *rest.Config, scheme *apiruntime.Scheme) *writeRecorder {
	t.Helper()
	w := &writeRecorder{first: map[string]outcome{}, bad: map[string][]string{}}
	c, err := cache.New(cfg, cache.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := c.GetInformer(t.Context(), &v1alpha1.QuantRun{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    w.observe,
		UpdateFunc: func(_, n any) { w.observe(n) },
	}); err != nil {
		t.Fatal(err)
	}
	go func() { _ = c.Start(t.Context()) }()
	if !c.WaitForCacheSync(t.Context()) {
		t.Fatal("run watch did not sync")
	}
	return w
}

func (w *writeRecorder) observe(obj any) {
	r, ok := obj.(*v1alpha1.QuantRun)
	if !ok || !isTerminal(r.Status.Phase) {
		return
	}
	o := outcome{Phase: r.Status.Phase, AgentID: r.Status.AgentID, Reason: r.Status.Reason, Results: r.Status.Results}
	if r.Status.CompletionTime != nil {
		o.CompletionTime = r.Status.CompletionTime.UTC().Format(time.RFC3339)
	}
	key := r.Namespace + "/" + r.Name
	w.mu.Lock()
	defer w.mu.Unlock()
	first, seen := w.first[key]
	if !seen {
		w.first[key] = o
		return
	}
	if !equality.Semantic.DeepEqual(first, o) {
		w.bad[r.Namespace] = append(w.bad[r.Namespace], fmt.Sprintf("run %s: outcome written twice: first %+v, then %+v (resourceVersion %s)",
			key, brief(first), brief(o), r.ResourceVersion))
	}
}

func brief(o outcome) string {
	return fmt.Sprintf("%s at %s by %q reason %q results=%v", o.Phase, o.CompletionTime, o.AgentID, o.Reason, o.Results != nil)
}

func (w *writeRecorder) violations(ns string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.bad[ns]...)
}
