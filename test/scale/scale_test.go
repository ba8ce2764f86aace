// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

//go:build scale

package scale_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kquant/kquant/agent/simulate"
	"github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/domain/supportlabels"
	"github.com/kquant/kquant/test/agentpool"
	"github.com/kquant/kquant/test/builders"
	"github.com/kquant/kquant/test/runpodsim"
	"github.com/kquant/kquant/test/scale"
	"github.com/kquant/kquant/test/testenv"
)

var (
	flagNodes       = flag.Int("nodes", 1000, "simulated nodes")
	flagGPUs        = flag.Int("gpus", 8, "H100 GPUs per node")
	flagJobs        = flag.Int("jobs", 10000, "AnyGPU jobs submitted in a burst by the anygpu scenario")
	flagScenarios   = flag.String("scenarios", "eachgpu,anygpu", "comma-separated scenarios: eachgpu (one EachGPU job over the fleet), anygpu (-jobs AnyGPU jobs at once)")
	flagManagerBin  = flag.String("manager-bin", "", "manager binary (default <repo>/bin/manager, from make build)")
	flagManagerArgs = flag.String("manager-args", "", "extra manager flags, space separated")
	flagWorkers     = flag.Int("pool-workers", 32, "agent pool: runs claimed at once")
	flagCreators    = flag.Int("create-workers", 64, "jobs the harness creates at once, so that submitting a burst is not what limits it")
	flagTimeout     = flag.Duration("scenario-timeout", 30*time.Minute, "give up on a scenario after this long")
	flagLogDir      = flag.String("log-dir", "", "where the manager's log (and API server profiles) go (default a temporary directory)")
	flagProfile     = flag.Duration("profile-apiserver", 0, "take a CPU profile of the API server for this long at each scenario's start, written to -log-dir as apiserver-SCENARIO.pprof (0: none)")
	flagAllocation  = flag.String("gpu-allocation", "None", "the manager's --gpu-allocation: None (the agents run the runs), DevicePlugin (run pods, the chart's default: KWOK's kubelets and test/runpodsim's run pods) or DRA (the same, each run pod with a ResourceClaim that test/runpodsim allocates as the scheduler does)")
	flagKWOK        = flag.String("kwok-bin", "", "KWOK binary for -gpu-allocation DevicePlugin (default: hack/kwok-assets.sh --cached)")
	flagRunPods     = flag.Int("runpod-workers", 256, "run pods executed at once by the simulated run pods (-gpu-allocation DevicePlugin)")
)

// runImage is the run pods' image: no kubelet pulls it, KWOK only reports
// the pod Running.
const runImage = "kquant-agent:scale"

const leaseNamespace = "kquant-system"

func TestScale(t *testing.T) {
	ctrllog.SetLogger(logr.Discard())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			t.Log(err)
		}
	}()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNamespace}}); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.Kubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	runPods := runsInPods(t)
	manager, managerMetrics, managerPprof := startManager(ctx, t, kubeconfig, runPods)

	spec, err := simulate.Parse(fmt.Sprintf("H100:%d", *flagGPUs))
	if err != nil {
		t.Fatal(err)
	}
	nodes := make([]string, *flagNodes)
	for i := range nodes {
		nodes[i] = fmt.Sprintf("sim-%04d", i)
	}
	var kwok *exec.Cmd
	if runPods {
		kwok = startKWOK(ctx, t, env, kubeconfig, nodes)
	}
	// Client-side rate limits off for the pool and the harness: they stand
	// for many processes, and must not be what limits the measurement.
	poolCfg := rest.CopyConfig(env.Config)
	poolCfg.QPS = -1
	poolCount := scale.Count(poolCfg)
	pool := agentpool.New(agentpool.Options{Config: poolCfg, Namespace: leaseNamespace, Nodes: nodes, Spec: spec, Workers: *flagWorkers, Observe: runPods})
	ready := make(chan struct{})
	poolDone := make(chan error, 1)
	started := time.Now()
	go func() { poolDone <- pool.Run(ctx, func() { close(ready) }) }()
	select {
	case <-ready:
	case err := <-poolDone:
		t.Fatalf("agent pool: %v", err)
	case <-time.After(10 * time.Minute):
		t.Fatal("agent pool did not start within 10 minutes")
	}
	t.Logf("agent pool: %d nodes x %d GPUs published in %s", len(nodes), *flagGPUs, time.Since(started).Round(time.Millisecond))
	if runPods {
		// The manager labels each Node from its first profile (nodelabels): a
		// write and an event per node, the fleet's coming up and not the
		// scenarios' work.
		awaitNodes(ctx, t, env, len(nodes), "labelled by the manager", func(n *corev1.Node) bool { return n.Labels[supportlabels.LabelFP8] != "" })
	}
	// The manager serves metrics once started; wait for it before the
	// first scenario's scrape.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := scale.ScrapeManager(ctx, managerMetrics)
		return err == nil, nil
	}); err != nil {
		t.Fatalf("the manager's metrics at %s: %v", managerMetrics, err)
	}

	harnessCfg := rest.CopyConfig(env.Config)
	harnessCfg.QPS = -1
	harnessCount := scale.Count(harnessCfg)
	// The simulated run pods' requests are counted with the pool's: both
	// stand for processes on the nodes.
	if runPods {
		startRunPods(ctx, t, poolCfg, spec)
	}
	tr := newTracker()
	harness := startWatch(ctx, t, harnessCfg, env, tr)
	metricsClient := kubernetes.NewForConfigOrDie(env.Config).Discovery().RESTClient()
	// The processes whose CPU a scenario reports: the manager, the control
	// plane, and the harness itself (the simulated agents and the job
	// creators), all on the same machine's cores.
	processes, err := scale.ControlPlanePIDs(env.AssetsDir, "kube-apiserver", "etcd")
	if err != nil {
		t.Fatal(err)
	}
	processes["manager"] = manager.Process.Pid
	processes["harness"] = os.Getpid()
	cpuBeside := []string{"kube-apiserver", "etcd", "harness"}
	if kwok != nil {
		processes["kwok"] = kwok.Process.Pid
		cpuBeside = append(cpuBeside, "kwok")
	}

	var rows []string
	for _, name := range strings.Split(*flagScenarios, ",") {
		sc := scenario{name: name, tr: tr, c: harness, nodes: len(nodes), gpus: *flagGPUs, managerPID: manager.Process.Pid}
		before, err := scale.ScrapeRequests(ctx, metricsClient)
		if err != nil {
			t.Fatal(err)
		}
		poolBefore, harnessBefore := poolCount.Requests(), harnessCount.Requests()
		ctrlBefore, err := scale.ScrapeManager(ctx, managerMetrics)
		if err != nil {
			t.Fatal(err)
		}
		procBefore, err := readAll(processes)
		if err != nil {
			t.Fatal(err)
		}
		profiled := profileAPIServer(ctx, t, metricsClient, name)
		res, err := sc.run(ctx, t)
		if err != nil {
			t.Fatalf("scenario %s: %v", name, err)
		}
		<-profiled
		heapProfile := filepath.Join(logDir(t), "manager-heap-"+name+".pprof")
		liveHeap, err := scale.ManagerHeap(ctx, managerPprof, managerMetrics, heapProfile)
		if err != nil {
			t.Fatal(err)
		}
		procAfter, err := readAll(processes)
		if err != nil {
			t.Fatal(err)
		}
		after, err := scale.ScrapeRequests(ctx, metricsClient)
		if err != nil {
			t.Fatal(err)
		}
		ctrlAfter, err := scale.ScrapeManager(ctx, managerMetrics)
		if err != nil {
			t.Fatal(err)
		}
		delta := after.Sub(before)
		runs := float64(res.runs)
		poolReq := float64(poolCount.Requests() - poolBefore)
		harnessReq := float64(harnessCount.Requests() - harnessBefore)
		cpu := procAfter["manager"].CPU - procBefore["manager"].CPU
		// Writes decide a given API server's rate (docs/benchmarks.md):
		// every write, and every write but the agents' Lease renewals.
		row := fmt.Sprintf("| %s | %d x %d | %d jobs / %d runs | %.0f | %.0f | %s | %s | %s | %.1f | %.1f | %.1f | %.2f | %.2f | %.0f MiB | %.0f MiB (%.1f KiB/run) | %.1f s (%.2f cores) | %.2f ms |",
			name, len(nodes), *flagGPUs, res.jobs, res.runs,
			res.bindRateOverall, res.bindRateWindow,
			res.p50.Round(time.Millisecond), res.p99.Round(time.Millisecond), res.finished.Round(time.Millisecond),
			delta.Requests.Total()/runs, poolReq/runs, (delta.Requests.Total()-poolReq-harnessReq)/runs,
			delta.Requests.Writes()/runs, delta.Requests.Writes("leases")/runs,
			float64(procAfter["manager"].PeakRSSBytes)/(1<<20), float64(liveHeap)/(1<<20), float64(liveHeap)/1024/runs, cpu.Seconds(), cpu.Seconds()/res.finished.Seconds(),
			float64(cpu.Microseconds())/1000/runs)
		rows = append(rows, row)
		// Logged at once too, so that a run cut short still reports its
		// finished scenarios.
		t.Logf("%s: %s", name, row)
		t.Logf("%s: manager heap profile after the scenario (a collection first): %s", name, heapProfile)
		t.Logf("%s: API requests by verb and resource: %s", name, strings.Join(delta.Requests.Top(12), ", "))
		t.Logf("%s: API writes per run by verb and resource: %s", name, strings.Join(delta.Requests.WritesPer(runs), ", "))
		t.Logf("%s: API requests answered with an error: %s", name, strings.Join(delta.Refused.Top(8), ", "))
		t.Logf("%s: mean API server latency: %s", name, strings.Join(delta.MeanLatency(8), ", "))
		// Whether a controller's workers, not the API server, were the limit.
		t.Logf("%s: controllers (per run): %s", name, strings.Join(ctrlAfter.Sub(ctrlBefore).Summary(res.finished, res.runs, 4), "; "))
		// Whether the API server or etcd ran out of cores, and what the
		// harness itself took of them.
		var cp []string
		for _, n := range cpuBeside {
			used := procAfter[n].CPU - procBefore[n].CPU
			cp = append(cp, fmt.Sprintf("%s %.1f s (%.2f cores, %.2f ms per run)", n, used.Seconds(), used.Seconds()/res.finished.Seconds(), float64(used.Microseconds())/1000/runs))
		}
		t.Logf("%s: CPU beside the manager: %s", name, strings.Join(cp, ", "))
	}
	fmt.Println()
	fmt.Println("| scenario | fleet | work | bound/s (creation→last bound) | bound/s (first→last bound) | p50 job→all bound | p99 job→all bound | creation→all finished | API req/run (all) | agent req/run | manager req/run | API writes/run (all) | API writes/run (without Leases) | manager peak RSS | manager live heap at the end | manager CPU | manager CPU/run |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		fmt.Println(r)
	}
}

// runsInPods reports whether -gpu-allocation asks for run pods.
func runsInPods(t *testing.T) bool {
	switch *flagAllocation {
	case "None":
		return false
	case "DevicePlugin", "DRA":
		return true
	}
	t.Fatalf("-gpu-allocation=%s: want None, DevicePlugin or DRA", *flagAllocation)
	return false
}

// startKWOK starts KWOK and creates the fleet's Nodes for it, and waits
// until KWOK has made every one Ready.
func startKWOK(ctx context.Context, t *testing.T, env *testenv.Env, kubeconfig string, nodes []string) *exec.Cmd {
	t.Helper()
	bin := *flagKWOK
	if bin == "" {
		out, err := exec.Command(filepath.Join(testenv.RepoRoot(), "hack", "kwok-assets.sh"), "--cached").Output()
		if err != nil {
			t.Fatalf("no KWOK binary: pass -kwok-bin or run hack/kwok-assets.sh first: %v", err)
		}
		bin = filepath.Join(strings.TrimSpace(string(out)), "kwok")
	}
	logFile, err := os.Create(filepath.Join(logDir(t), "kwok.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := scale.StartKWOK(ctx, bin, kubeconfig, testenv.RepoRoot(), logFile)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logFile.Close()
	})
	started := time.Now()
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS = -1
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	if err := scale.CreateNodes(ctx, c, nodes, *flagGPUs, *flagCreators); err != nil {
		t.Fatal(err)
	}
	awaitNodes(ctx, t, env, len(nodes), "Ready (KWOK, log "+logFile.Name()+")", func(n *corev1.Node) bool {
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status == corev1.ConditionTrue
			}
		}
		return false
	})
	t.Logf("kwok: %s, %d nodes Ready in %s, log %s", bin, len(nodes), time.Since(started).Round(time.Millisecond), logFile.Name())
	return cmd
}

// awaitNodes waits until want Nodes are what ok says, described by what.
func awaitNodes(ctx context.Context, t *testing.T, env *testenv.Env, want int, what string, ok func(*corev1.Node) bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, time.Second, 10*time.Minute, true, func(ctx context.Context) (bool, error) {
		list := &corev1.NodeList{}
		if err := env.Client.List(ctx, list); err != nil {
			return false, nil //nolint:nilerr // a List that fails under load is tried again at the next poll
		}
		n := 0
		for i := range list.Items {
			if ok(&list.Items[i]) {
				n++
			}
		}
		return n == want, nil
	})
	if err != nil {
		t.Fatalf("waiting for %d nodes %s: %v", want, what, err)
	}
}

// startRunPods starts the simulated run pods (test/runpodsim) and waits for
// their watch.
func startRunPods(ctx context.Context, t *testing.T, cfg *rest.Config, spec simulate.Spec) {
	t.Helper()
	source := v1alpha1.AllocationSourceDevicePlugin
	if *flagAllocation == "DRA" {
		source = v1alpha1.AllocationSourceDRA
	}
	sim := runpodsim.New(runpodsim.Options{Config: cfg, Spec: spec, Source: source, Workers: *flagRunPods})
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- sim.Run(ctx, func() { close(ready) }) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("run pod simulator: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("run pod simulator did not start within a minute")
	}
}

// readAll reads /proc for each named process.
func readAll(pids map[string]int) (map[string]scale.ProcStats, error) {
	out := map[string]scale.ProcStats{}
	for n, pid := range pids {
		s, err := scale.ReadProc(pid)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		out[n] = s
	}
	return out, nil
}

// profileAPIServer starts a CPU profile of the API server for
// -profile-apiserver, if set, into -log-dir; the channel closes when it is
// written (at once when profiling is off).
func profileAPIServer(ctx context.Context, t *testing.T, c rest.Interface, scenario string) <-chan struct{} {
	done := make(chan struct{})
	if *flagProfile <= 0 {
		close(done)
		return done
	}
	path := filepath.Join(logDir(t), "apiserver-"+scenario+".pprof")
	go func() {
		defer close(done)
		if err := scale.ProfileAPIServer(ctx, c, *flagProfile, path); err != nil {
			t.Logf("%s: %v", scenario, err)
			return
		}
		t.Logf("%s: API server CPU profile of %s in %s", scenario, *flagProfile, path)
	}()
	return done
}

// logDir is -log-dir, or a temporary directory of the test when unset.
func logDir(t *testing.T) string {
	if *flagLogDir != "" {
		return *flagLogDir
	}
	return t.TempDir()
}

// startManager runs the manager binary against the test API server and
// returns it with the addresses of its plain-HTTP metrics endpoint, which the
// harness scrapes for controller-runtime's worker and queue counters, and of
// its pprof endpoints, for the heap after each scenario.
func startManager(ctx context.Context, t *testing.T, kubeconfig string, runPods bool) (*exec.Cmd, string, string) {
	t.Helper()
	bin := *flagManagerBin
	if bin == "" {
		bin = filepath.Join(testenv.RepoRoot(), "bin", "manager")
	}
	metricsAddr, pprofAddr := testenv.FreeLocalAddr(t), testenv.FreeLocalAddr(t)
	logFile, err := os.Create(filepath.Join(logDir(t), "manager.log"))
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--kubeconfig=" + kubeconfig, "--leader-elect=false", "--lease-namespace=" + leaseNamespace, "--gpu-allocation=" + *flagAllocation,
		"--metrics-bind-address=" + metricsAddr, "--metrics-secure=false", "--health-probe-bind-address=127.0.0.1:0", "--pprof-bind-address=" + pprofAddr}
	if runPods {
		args = append(args, "--run-image="+runImage)
	}
	args = append(args, strings.Fields(*flagManagerArgs)...)
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s (run make build first): %v", bin, err)
	}
	t.Logf("manager: %s %s, log %s", bin, strings.Join(args, " "), logFile.Name())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logFile.Close()
	})
	return cmd, metricsAddr, pprofAddr
}

// tracker records when the harness first saw each run, saw it bound and saw
// it finished, and which jobs finished.
type tracker struct {
	mu       sync.Mutex
	runs     map[string]*runTimes
	jobsDone map[string]time.Time
}

type runTimes struct {
	ns, job           string
	seen, bound, done time.Time
	phase             v1alpha1.RunPhase
}

func newTracker() *tracker {
	return &tracker{runs: map[string]*runTimes{}, jobsDone: map[string]time.Time{}}
}

func (tr *tracker) run(obj any) {
	r, ok := obj.(*v1alpha1.QuantRun)
	if !ok {
		return
	}
	now := time.Now()
	tr.mu.Lock()
	defer tr.mu.Unlock()
	key := r.Namespace + "/" + r.Name
	rt := tr.runs[key]
	if rt == nil {
		rt = &runTimes{ns: r.Namespace, job: r.Spec.JobRef.Name, seen: now}
		tr.runs[key] = rt
	}
	if r.Spec.NodeName != "" && rt.bound.IsZero() {
		rt.bound = now
	}
	rt.phase = r.Status.Phase
	if (r.Status.Phase == v1alpha1.RunPhaseSucceeded || r.Status.Phase == v1alpha1.RunPhaseFailed) && rt.done.IsZero() {
		rt.done = now
	}
}

func (tr *tracker) job(obj any) {
	j, ok := obj.(*v1alpha1.QuantJob)
	if !ok {
		return
	}
	if j.Status.Phase != v1alpha1.JobPhaseSucceeded && j.Status.Phase != v1alpha1.JobPhaseFailed {
		return
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	key := j.Namespace + "/" + j.Name
	if _, ok := tr.jobsDone[key]; !ok {
		tr.jobsDone[key] = time.Now()
	}
}

// startWatch starts the harness's own watch of runs and jobs.
func startWatch(ctx context.Context, t *testing.T, cfg *rest.Config, env *testenv.Env, tr *tracker) client.Client {
	t.Helper()
	c, err := cache.New(cfg, cache.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	for obj, f := range map[client.Object]func(any){&v1alpha1.QuantRun{}: tr.run, &v1alpha1.QuantJob{}: tr.job} {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    f,
			UpdateFunc: func(_, n any) { f(n) },
		}); err != nil {
			t.Fatal(err)
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		t.Fatal("harness cache did not sync")
	}
	direct, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	return direct
}

type scenario struct {
	name        string
	tr          *tracker
	c           client.Client
	nodes, gpus int
	// managerPID is read for the progress lines: a scenario cut short
	// still says how large the manager grew.
	managerPID int
}

type result struct {
	jobs, runs                      int
	bindRateOverall, bindRateWindow float64
	p50, p99, finished              time.Duration
}

func (s scenario) run(ctx context.Context, t *testing.T) (result, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "scale-" + s.name + "-"}}
	if err := s.c.Create(ctx, ns); err != nil {
		return result{}, fmt.Errorf("creating namespace: %w", err)
	}
	if err := s.c.Create(ctx, builders.MakeQuantRecipe("fp8", ns.Name).Obj()); err != nil {
		return result{}, fmt.Errorf("creating recipe: %w", err)
	}
	var jobs []*v1alpha1.QuantJob
	switch s.name {
	case "eachgpu":
		jobs = append(jobs, builders.MakeQuantJob("each-gpu", ns.Name).Recipe("fp8").EachGPU().MaxParallel(int32(s.nodes*s.gpus)).Obj())
	case "anygpu":
		for i := range *flagJobs {
			jobs = append(jobs, builders.MakeQuantJob(fmt.Sprintf("any-%05d", i), ns.Name).Recipe("fp8").AnyGPU().Obj())
		}
	default:
		return result{}, fmt.Errorf("unknown scenario %q", s.name)
	}
	created := make(map[string]time.Time, len(jobs))
	var mu sync.Mutex
	start := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(*flagCreators)
	for _, j := range jobs {
		g.Go(func() error {
			at := time.Now()
			if err := s.c.Create(gctx, j); err != nil {
				return fmt.Errorf("creating job %s: %w", j.Name, err)
			}
			mu.Lock()
			created[j.Name] = at
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return result{}, err
	}
	t.Logf("%s: %d jobs created in %s", s.name, len(jobs), time.Since(start).Round(time.Millisecond))

	deadline := time.Now().Add(*flagTimeout)
	lastLog := time.Now()
	for {
		done, runs, bound, finished := s.progress(ns.Name)
		if done == len(jobs) && finished == runs {
			break
		}
		if time.Now().After(deadline) {
			return result{}, fmt.Errorf("not finished after %s: %d/%d jobs done, runs %d seen, %d bound, %d finished", *flagTimeout, done, len(jobs), runs, bound, finished)
		}
		if time.Since(lastLog) > 10*time.Second {
			rss := "?"
			if p, err := scale.ReadProc(s.managerPID); err == nil {
				rss = fmt.Sprintf("%d MiB", p.PeakRSSBytes>>20)
			}
			t.Logf("%s [%s]: %d/%d jobs done, runs %d seen, %d bound, %d finished; manager peak RSS %s", s.name, time.Since(start).Round(time.Second), done, len(jobs), runs, bound, finished, rss)
			lastLog = time.Now()
		}
		time.Sleep(200 * time.Millisecond)
	}
	return s.summarize(ns.Name, start, created), nil
}

func (s scenario) progress(ns string) (jobsDone, runs, bound, finished int) {
	s.tr.mu.Lock()
	defer s.tr.mu.Unlock()
	for k := range s.tr.jobsDone {
		if strings.HasPrefix(k, ns+"/") {
			jobsDone++
		}
	}
	for _, r := range s.tr.runs {
		if r.ns != ns {
			continue
		}
		runs++
		if !r.bound.IsZero() {
			bound++
		}
		if !r.done.IsZero() {
			finished++
		}
	}
	return jobsDone, runs, bound, finished
}

func (s scenario) summarize(ns string, start time.Time, created map[string]time.Time) result {
	s.tr.mu.Lock()
	defer s.tr.mu.Unlock()
	res := result{jobs: len(created)}
	allBound := map[string]time.Time{}
	var firstBound, lastBound, lastDone time.Time
	for _, r := range s.tr.runs {
		if r.ns != ns {
			continue
		}
		res.runs++
		if r.bound.After(allBound[r.job]) {
			allBound[r.job] = r.bound
		}
		if firstBound.IsZero() || r.bound.Before(firstBound) {
			firstBound = r.bound
		}
		if r.bound.After(lastBound) {
			lastBound = r.bound
		}
		if r.done.After(lastDone) {
			lastDone = r.done
		}
	}
	for k, at := range s.tr.jobsDone {
		if strings.HasPrefix(k, ns+"/") && at.After(lastDone) {
			lastDone = at
		}
	}
	var lat []time.Duration
	for job, at := range allBound {
		lat = append(lat, at.Sub(created[job]))
	}
	res.p50, res.p99 = scale.Percentile(lat, 50), scale.Percentile(lat, 99)
	res.finished = lastDone.Sub(start)
	res.bindRateOverall = float64(res.runs) / lastBound.Sub(start).Seconds()
	res.bindRateWindow = float64(res.runs) / max(lastBound.Sub(firstBound).Seconds(), 1e-3)
	return res
}
