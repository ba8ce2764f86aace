// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package admission tests what the API server admits and refuses of kquant's
// CRDs, and what kubectl shows of them, against a real kube-apiserver.
package admission

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
	"github.com/kquant/kquant/test/testenv"
)

// env is the control plane shared by the tests of this package; each test works
// in its own namespace.
var env *testenv.Env

func TestMain(m *testing.M) {
	testenv.RunPackage(m, func(e *testenv.Env) { env = e })
}

func newNamespace(t *testing.T) string {
	t.Helper()
	ns, err := env.CreateNamespace(context.Background(), strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))[:min(len(t.Name()), 40)])
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// decode reads one YAML manifest into an unstructured object in namespace ns
// (cluster-scoped kinds ignore it).
func decode(t *testing.T, manifest, ns string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &obj.Object); err != nil {
		t.Fatalf("decoding manifest: %v\n%s", err, manifest)
	}
	if obj.GetKind() != "GPUNodeProfile" {
		obj.SetNamespace(ns)
	}
	return obj
}

func manifestFiles(t *testing.T, dirs ...string) []string {
	t.Helper()
	var files []string
	for _, dir := range dirs {
		matches, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), dir, "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, matches...)
	}
	if len(files) == 0 {
		t.Fatalf("no manifests in %v", dirs)
	}
	return files
}

func TestCatalogAndSamplesAreAccepted(t *testing.T) {
	ns := newNamespace(t)
	for _, file := range manifestFiles(t, "recipes", "config/samples") {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			obj := decode(t, string(data), ns)
			if err := env.Client.Create(context.Background(), obj); err != nil {
				t.Fatalf("creating %s: %v", file, err)
			}
		})
	}
}

const validRecipe = `
apiVersion: kquant.dev/v1alpha1
kind: QuantRecipe
metadata: {name: r}
spec:
`

const validJob = `
apiVersion: kquant.dev/v1alpha1
kind: QuantJob
metadata: {name: j}
spec:
  recipeRef: {name: mxfp8}
`

const validCronJob = `
apiVersion: kquant.dev/v1alpha1
kind: QuantCronJob
metadata: {name: c}
spec:
  jobTemplate:
    spec:
      recipeRef: {name: mxfp8}
      workload: {shapes: [{rows: 1, cols: 1}]}
`

// validRun is a QuantRun as the job controller creates it, up to its
// workload: its spec holds the recipe and the workload together, so the
// rules that need both (the group alignment) are its.
const validRun = `
apiVersion: kquant.dev/v1alpha1
kind: QuantRun
metadata: {name: run}
spec:
  jobRef: {name: j, uid: 5d2c54a4-0000-4000-8000-000000000001}
  recipe: {name: mxfp8, spec: {scheme: MXFP8BlockScaling}}
  mode: Validation
  execution: {}
`

const validGatePolicy = `
apiVersion: kquant.dev/v1alpha1
kind: QuantGatePolicy
metadata: {name: p}
spec:
  recipeRef: {name: fp8-current-scaling}
`

const gatePolicyValidation = "  validation: {workload: {shapes: [{rows: 1, cols: 1}]}}\n"

func TestInvalidManifestsAreRefused(t *testing.T) {
	cases := []struct {
		name      string
		manifest  string
		wantField string // the refusal must name this field
	}{
		{"recipe without scheme", validRecipe + "  format: E4M3\n", "spec.scheme"},
		{"recipe with unknown scheme", validRecipe + "  scheme: FP8\n", "spec.scheme"},
		{"recipe with E5M2", validRecipe + "  scheme: Float8CurrentScaling\n  format: E5M2\n", "spec.format"},
		{"recipe with unknown format", validRecipe + "  scheme: Float8CurrentScaling\n  format: E3M4\n", "spec.format"},
		{"NVFP4 with an FP8 format", validRecipe + "  scheme: NVFP4BlockScaling\n  format: E4M3\n", "spec.format"},
		{"MXFP8 with E2M1", validRecipe + "  scheme: MXFP8BlockScaling\n  format: E2M1\n", "spec.format"},
		{"delayed options with current scaling", validRecipe + "  scheme: Float8CurrentScaling\n  delayedScaling: {margin: 1}\n", "spec.delayedScaling"},
		{"current options with delayed scaling", validRecipe + "  scheme: DelayedScaling\n  currentScaling: {power2Scales: true}\n", "spec.currentScaling"},
		{"block options with MXFP8", validRecipe + "  scheme: MXFP8BlockScaling\n  blockScaling: {power2Scales: true}\n", "spec.blockScaling"},
		{"MXFP8 options with NVFP4", validRecipe + "  scheme: NVFP4BlockScaling\n  mxfp8: {scaleRounding: OCP}\n", "spec.mxfp8"},
		{"NVFP4 options with block scaling", validRecipe + "  scheme: Float8BlockScaling\n  nvfp4: {stochasticRounding: false}\n", "spec.nvfp4"},
		{"4over6 on activations with the default RHT", validRecipe + "  scheme: NVFP4BlockScaling\n  nvfp4: {fourOverSix: activations}\n", "spec.nvfp4.fourOverSix"},
		{"4over6 on all with the RHT", validRecipe + "  scheme: NVFP4BlockScaling\n  nvfp4: {fourOverSix: all, randomHadamardTransform: true}\n", "spec.nvfp4.fourOverSix"},
		{"unknown 4over6 scope", validRecipe + "  scheme: NVFP4BlockScaling\n  nvfp4: {fourOverSix: gradients}\n", "spec.nvfp4.fourOverSix"},
		{"unknown 4over6 error mode", validRecipe + "  scheme: NVFP4BlockScaling\n  nvfp4: {fourOverSix: weights, fourOverSixErrorMode: RMSE}\n", "spec.nvfp4.fourOverSixErrorMode"},
		{"unknown 4over6 bound scope", validRecipe + "  scheme: NVFP4BlockScaling\n  nvfp4: {fourOverSixE4M3Bound256: some}\n", "spec.nvfp4.fourOverSixE4M3Bound256"},
		{"row-scaled activations with the default RHT", validRecipe + "  scheme: NVFP4BlockScaling\n  nvfp4: {rowScaledActivation: true}\n", "spec.nvfp4.rowScaledActivation"},
		{"amax history of 0", validRecipe + "  scheme: DelayedScaling\n  delayedScaling: {amaxHistoryLen: 0}\n", "spec.delayedScaling.amaxHistoryLen"},
		{"amax history over 65536", validRecipe + "  scheme: DelayedScaling\n  delayedScaling: {amaxHistoryLen: 65537}\n", "spec.delayedScaling.amaxHistoryLen"},
		{"margin over 32", validRecipe + "  scheme: DelayedScaling\n  delayedScaling: {margin: 33}\n", "spec.delayedScaling.margin"},
		{"negative margin", validRecipe + "  scheme: DelayedScaling\n  delayedScaling: {margin: -1}\n", "spec.delayedScaling.margin"},
		{"unknown amax algorithm", validRecipe + "  scheme: DelayedScaling\n  delayedScaling: {amaxComputeAlgo: mean}\n", "spec.delayedScaling.amaxComputeAlgo"},
		{"unknown MXFP8 scale rounding", validRecipe + "  scheme: MXFP8BlockScaling\n  mxfp8: {scaleRounding: UP}\n", "spec.mxfp8.scaleRounding"},
		{"negative amax epsilon", validRecipe + "  scheme: Float8CurrentScaling\n  currentScaling: {amaxEpsilon: \"-1\"}\n", "spec.currentScaling.amaxEpsilon"},
		{"job without recipeRef", strings.Replace(validJob, "  recipeRef: {name: mxfp8}\n", "", 1) + "  workload: {shapes: [{rows: 1, cols: 1}]}\n", "spec.recipeRef"},
		{"job with empty recipe name", strings.Replace(validJob, "{name: mxfp8}", "{name: \"\"}", 1) + "  workload: {shapes: [{rows: 1, cols: 1}]}\n", "spec.recipeRef.name"},
		{"job with unknown mode", validJob + "  mode: Train\n  workload: {shapes: [{rows: 1, cols: 1}]}\n", "spec.mode"},
		{"job with unknown level", validJob + "  level: Huge\n  workload: {shapes: [{rows: 1, cols: 1}]}\n", "spec.level"},
		{"job without workload", validJob, "spec.workload"},
		{"job without shapes", validJob + "  workload: {shapes: []}\n", "spec.workload.shapes"},
		{"too many shapes", validJob + "  workload:\n    shapes: [" + strings.Repeat("{rows: 1, cols: 1},", 16) + "{rows: 1, cols: 1}]\n", "spec.workload.shapes"},
		{"zero rows", validJob + "  workload: {shapes: [{rows: 0, cols: 1}]}\n", "spec.workload.shapes[0].rows"},
		{"negative cols", validJob + "  workload: {shapes: [{rows: 1, cols: -4}]}\n", "spec.workload.shapes[0].cols"},
		{"unknown operation", validJob + "  workload: {operation: Matmul, shapes: [{rows: 1, cols: 1}]}\n", "spec.workload.operation"},
		{"unknown input dtype", validJob + "  workload: {inputDType: FP8, shapes: [{rows: 1, cols: 1}]}\n", "spec.workload.inputDType"},
		{"unknown tensor role", validJob + "  workload: {tensorRole: Bias, shapes: [{rows: 1, cols: 1}]}\n", "spec.workload.tensorRole"},
		{"unknown distribution", validJob + "  workload: {distribution: Cauchy, shapes: [{rows: 1, cols: 1}]}\n", "spec.workload.distribution"},
		{"grouped without groups", validJob + "  workload: {operation: GroupedQuantize, shapes: [{rows: 64, cols: 64}]}\n", "spec.workload.groups"},
		{"groups without grouped operation", validJob + "  workload: {shapes: [{rows: 64, cols: 64}], groups: {count: 2}}\n", "spec.workload.groups"},
		{"zero groups", validJob + "  workload: {operation: GroupedQuantize, shapes: [{rows: 64, cols: 64}], groups: {count: 0}}\n", "spec.workload.groups.count"},
		{"more than 1024 groups", validJob + "  workload: {operation: GroupedQuantize, shapes: [{rows: 64, cols: 64}], groups: {count: 1025}}\n", "spec.workload.groups.count"},
		{"explicit sizes of the wrong count", validJob + "  workload: {operation: GroupedQuantize, shapes: [{rows: 64, cols: 64}], groups: {count: 3, splits: Explicit, sizes: [32, 32]}}\n", "spec.workload.groups.sizes"},
		{"explicit splits without sizes", validJob + "  workload: {operation: GroupedQuantize, shapes: [{rows: 64, cols: 64}], groups: {count: 2, splits: Explicit}}\n", "spec.workload.groups.sizes"},
		{"sizes with uniform splits", validJob + "  workload: {operation: GroupedQuantize, shapes: [{rows: 64, cols: 64}], groups: {count: 2, sizes: [32, 32]}}\n", "spec.workload.groups.sizes"},
		{"MXFP8 run with a group of 48 rows", validRun + "  workload: {operation: GroupedQuantize, shapes: [{rows: 80, cols: 64}], groups: {count: 2, splits: Explicit, sizes: [32, 48]}}\n", "spec.workload.groups.sizes"},
		{"NVFP4 run with a group of 64 rows", strings.Replace(validRun, "MXFP8BlockScaling", "NVFP4BlockScaling", 1) + "  workload: {operation: GroupedQuantize, shapes: [{rows: 192, cols: 64}], groups: {count: 2, splits: Explicit, sizes: [128, 64]}}\n", "spec.workload.groups.sizes"},
		{"outFeatures outside QuantizedLinear", validJob + "  workload: {shapes: [{rows: 1, cols: 1, outFeatures: 8}]}\n", "spec.workload.shapes"},
		{"unknown usage", validJob + "  workload: {shapes: [{rows: 1, cols: 1}], usage: Diagonal}\n", "spec.workload.usage"},
		{"columnwise QuantizedLinear", validJob + "  workload: {operation: QuantizedLinear, shapes: [{rows: 1, cols: 1}], usage: Columnwise}\n", "spec.workload.usage"},
		{"unknown graph mode", validJob + "  workload: {shapes: [{rows: 1, cols: 1}]}\n  execution: {graphs: Sometimes}\n", "spec.execution.graphs"},
		{"zero iterations", validJob + "  workload: {shapes: [{rows: 1, cols: 1}]}\n  execution: {iterations: 0}\n", "spec.execution.iterations"},
		{"unknown placement policy", validJob + "  workload: {shapes: [{rows: 1, cols: 1}]}\n  placement: {policy: AllGPUs}\n", "spec.placement.policy"},
		{"unknown architecture", validJob + "  workload: {shapes: [{rows: 1, cols: 1}]}\n  placement: {architectures: [Volta]}\n", "spec.placement.architectures[0]"},
		{"malformed compute capability", validJob + "  workload: {shapes: [{rows: 1, cols: 1}]}\n  placement: {minComputeCapability: nine}\n", "spec.placement.minComputeCapability"},
		{"unknown migSlices", validJob + "  workload: {shapes: [{rows: 1, cols: 1}]}\n  placement: {migSlices: Only}\n", "spec.placement.migSlices"},
		{"zero maxParallel", validJob + "  workload: {shapes: [{rows: 1, cols: 1}]}\n  placement: {maxParallel: 0}\n", "spec.placement.maxParallel"},
		{"minSNRdB over 200", validJob + "  workload: {shapes: [{rows: 1, cols: 1}]}\n  tolerances: {minSNRdB: \"250\"}\n", "spec.tolerances.minSNRdB"},
		{"negative minSNRdB", validJob + "  workload: {shapes: [{rows: 1, cols: 1}]}\n  tolerances: {minSNRdB: \"-3\"}\n", "spec.tolerances.minSNRdB"},
		{"negative backoffLimit", validJob + "  workload: {shapes: [{rows: 1, cols: 1}]}\n  backoffLimit: -1\n", "spec.backoffLimit"},
		{"negative disruptionLimit", validJob + "  workload: {shapes: [{rows: 1, cols: 1}]}\n  disruptionLimit: -1\n", "spec.disruptionLimit"},
		{"disruptionLimit over 1000", validJob + "  workload: {shapes: [{rows: 1, cols: 1}]}\n  disruptionLimit: 1001\n", "spec.disruptionLimit"},
		{"zero activeDeadlineSeconds", validJob + "  workload: {shapes: [{rows: 1, cols: 1}]}\n  activeDeadlineSeconds: 0\n", "spec.activeDeadlineSeconds"},
		{"negative ttlSecondsAfterFinished", validJob + "  workload: {shapes: [{rows: 1, cols: 1}]}\n  ttlSecondsAfterFinished: -5\n", "spec.ttlSecondsAfterFinished"},
		{"job with gate", validJob + "  workload: {shapes: [{rows: 1, cols: 1}]}\n  gate: {label: true, taint: NoSchedule}\n", "spec.gate"},
		{"cronjob template with gate", validCronJob + "      gate: {label: true}\n  schedule: \"@daily\"\n", "spec.jobTemplate.spec.gate"},
		{"gate policy without validation", validGatePolicy + "  actions: {label: true}\n", "spec.validation"},
		{"gate policy with no action", validGatePolicy + gatePolicyValidation + "  actions: {condition: false, label: false}\n", "spec.actions"},
		{"gate policy with an unknown taint effect", validGatePolicy + gatePolicyValidation + "  actions: {taint: {effect: Evict}}\n", "spec.actions.taint.effect"},
		{"gate policy on one GPU", validGatePolicy + "  validation: {workload: {shapes: [{rows: 1, cols: 1}]}, placement: {policy: AnyGPU}}\n  actions: {label: true}\n", "spec.validation.placement.policy"},
		{"gate policy period under 10m", validGatePolicy + gatePolicyValidation + "  actions: {label: true}\n  period: 5m\n", "spec.period"},
		{"gate policy period over a year", validGatePolicy + gatePolicyValidation + "  actions: {label: true}\n  period: 8761h\n", "spec.period"},
		{"gate policy period not a duration", validGatePolicy + gatePolicyValidation + "  actions: {label: true}\n  period: daily\n", "spec.period"},
		{"gate policy idle for under a minute", validGatePolicy + gatePolicyValidation + "  idleValidation: {idleFor: 30s}\n", "spec.idleValidation.idleFor"},
		{"gate policy idle for over a week", validGatePolicy + gatePolicyValidation + "  idleValidation: {idleFor: 169h}\n", "spec.idleValidation.idleFor"},
		{"gate policy idle validation without idleFor", validGatePolicy + gatePolicyValidation + "  idleValidation: {interval: 1h}\n", "spec.idleValidation.idleFor"},
		{"gate policy idle interval under 10m", validGatePolicy + gatePolicyValidation + "  idleValidation: {idleFor: 5m, interval: 5m}\n", "spec.idleValidation.interval"},
		{"gate policy without recipe name", strings.Replace(validGatePolicy, "{name: fp8-current-scaling}", "{}", 1) + gatePolicyValidation + "  actions: {label: true}\n", "spec.recipeRef.name"},
		{"gate policy deadline over 7 days", validGatePolicy + "  validation: {workload: {shapes: [{rows: 1, cols: 1}]}, activeDeadlineSeconds: 604801}\n  actions: {label: true}\n", "spec.validation.activeDeadlineSeconds"},
		{"gate policy name over 52 characters", strings.Replace(validGatePolicy, "{name: p}", "{name: "+strings.Repeat("p", 53)+"}", 1) + gatePolicyValidation + "  actions: {label: true}\n", "metadata.name"},
		{"cronjob without schedule or trigger", validCronJob, "spec"},
		{"cronjob with unknown concurrency policy", validCronJob + "  schedule: \"@daily\"\n  concurrencyPolicy: Sometimes\n", "spec.concurrencyPolicy"},
		{"cronjob with negative starting deadline", validCronJob + "  schedule: \"@daily\"\n  startingDeadlineSeconds: -1\n", "spec.startingDeadlineSeconds"},
		// Durations one past MaxDurationSeconds: time.Duration arithmetic
		// with them could overflow.
		{"activeDeadlineSeconds over a year", validJob + "  workload: {shapes: [{rows: 1, cols: 1}]}\n  activeDeadlineSeconds: 31622401\n", "spec.activeDeadlineSeconds"},
		{"activeDeadlineSeconds that overflowed time.Duration", validJob + "  workload: {shapes: [{rows: 1, cols: 1}]}\n  activeDeadlineSeconds: 10000000000\n", "spec.activeDeadlineSeconds"},
		{"ttlSecondsAfterFinished over a year", validJob + "  workload: {shapes: [{rows: 1, cols: 1}]}\n  ttlSecondsAfterFinished: 31622401\n", "spec.ttlSecondsAfterFinished"},
		{"runTimeoutSeconds over a year", validJob + "  workload: {shapes: [{rows: 1, cols: 1}]}\n  execution: {runTimeoutSeconds: 31622401}\n", "spec.execution.runTimeoutSeconds"},
		{"zero runTimeoutSeconds", validJob + "  workload: {shapes: [{rows: 1, cols: 1}]}\n  execution: {runTimeoutSeconds: 0}\n", "spec.execution.runTimeoutSeconds"},
		{"maxRuns over 100000", validJob + "  workload: {shapes: [{rows: 1, cols: 1}]}\n  placement: {maxRuns: 100001}\n", "spec.placement.maxRuns"},
		{"zero maxRuns", validJob + "  workload: {shapes: [{rows: 1, cols: 1}]}\n  placement: {maxRuns: 0}\n", "spec.placement.maxRuns"},
		{"starting deadline over a year", validCronJob + "  schedule: \"@daily\"\n  startingDeadlineSeconds: 31622401\n", "spec.startingDeadlineSeconds"},
		{"template deadline over a year", strings.Replace(validCronJob, "      workload:", "      activeDeadlineSeconds: 31622401\n      workload:", 1) + "  schedule: \"@daily\"\n", "spec.jobTemplate.spec.activeDeadlineSeconds"},
		// Schedules: what CEL can check. A time zone name the manager does
		// not know and a list or range that never fires are the
		// controller's (the condition ScheduleValid).
		{"schedule that is only a zone prefix", validCronJob + "  schedule: \"CRON_TZ=UTC\"\n", "spec.schedule"},
		{"schedule with a TZ prefix", validCronJob + "  schedule: \"TZ=Europe/Berlin 0 * * * *\"\n", "spec.schedule"},
		{"schedule of six fields", validCronJob + "  schedule: \"0 0 * * * *\"\n", "spec.schedule"},
		{"schedule of words", validCronJob + "  schedule: \"every day\"\n", "spec.schedule"},
		{"schedule with an unknown descriptor", validCronJob + "  schedule: \"@fortnightly\"\n", "spec.schedule"},
		{"schedule on February 31st", validCronJob + "  schedule: \"0 0 31 2 *\"\n", "spec.schedule never fires"},
		{"schedule on February 30th by name", validCronJob + "  schedule: \"0 12 30 feb ?\"\n", "spec.schedule never fires"},
		{"schedule on April 31st", validCronJob + "  schedule: \"15 3 31 4 *\"\n", "spec.schedule never fires"},
		{"time zone that is a path", validCronJob + "  schedule: \"@daily\"\n  timeZone: ../../etc/passwd\n", "spec.timeZone"},
	}
	ns := newNamespace(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := decode(t, tc.manifest, ns)
			err := env.Client.Create(context.Background(), obj)
			if err == nil {
				_ = env.Client.Delete(context.Background(), obj)
				t.Fatalf("manifest was accepted, want a refusal naming %s:\n%s", tc.wantField, tc.manifest)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want an Invalid error, got %v", err)
			}
			if !strings.Contains(err.Error(), tc.wantField) {
				t.Errorf("refusal does not name %s: %v", tc.wantField, err)
			}
		})
	}
}

// TestBoundsAreAccepted creates what the bounds of TestInvalidManifestsAreRefused
// let through: every duration at MaxDurationSeconds, and the schedules whose
// faults only the controller can see.
func TestBoundsAreAccepted(t *testing.T) {
	atMax := fmt.Sprintf("%d", kquantv1alpha1.MaxDurationSeconds)
	cases := []struct {
		name     string
		manifest string
	}{
		{"durations at their maximum", validJob + "  workload: {shapes: [{rows: 1, cols: 1}]}\n  activeDeadlineSeconds: " + atMax +
			"\n  ttlSecondsAfterFinished: " + atMax + "\n  execution: {runTimeoutSeconds: " + atMax + "}\n  placement: {maxRuns: 100000}\n"},
		{"retry limits at their bounds", validJob + "  workload: {shapes: [{rows: 1, cols: 1}]}\n  backoffLimit: 100\n  disruptionLimit: 1000\n"},
		{"no disruption retried", validJob + "  workload: {shapes: [{rows: 1, cols: 1}]}\n  disruptionLimit: 0\n"},
		{"idle validation at its bounds", validGatePolicy + gatePolicyValidation + "  idleValidation: {idleFor: 1m, interval: 10m}\n"},
		{"idle validation at its upper bounds", validGatePolicy + gatePolicyValidation + "  idleValidation: {idleFor: 168h, interval: 8760h}\n"},
		{"starting deadline at its maximum", validCronJob + "  schedule: \"@daily\"\n  startingDeadlineSeconds: " + atMax + "\n"},
		{"schedule with names, ranges and steps", validCronJob + "  schedule: \"*/5 1-3 * JAN-MAR MON,FRI\"\n"},
		{"schedule every 90 minutes", validCronJob + "  schedule: \"@every 1h30m\"\n"},
		{"schedule whose list never fires", validCronJob + "  schedule: \"0 0 30,31 2 *\"\n"},
		{"February 31st or any Monday of February", validCronJob + "  schedule: \"0 0 31 2 MON\"\n"},
		{"time zone the manager may not know", validCronJob + "  schedule: \"@daily\"\n  timeZone: Mars/Olympus_Mons\n"},
		{"MXFP8 run with groups of 32 rows", validRun + "  workload: {operation: GroupedQuantize, shapes: [{rows: 96, cols: 64}], groups: {count: 3, splits: Explicit, sizes: [32, 0, 64]}}\n"},
		{"4over6 on weights keeps the RHT", validRecipe + "  scheme: NVFP4BlockScaling\n  nvfp4: {fourOverSix: weights}\n"},
		{"4over6 and row scaling without the RHT", validRecipe + "  scheme: NVFP4BlockScaling\n  nvfp4: {fourOverSix: all, fourOverSixErrorMode: MSE, randomHadamardTransform: false, rowScaledActivation: true}\n"},
	}
	ns := newNamespace(t)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := decode(t, tc.manifest, ns)
			obj.SetName(fmt.Sprintf("bound-%d", i))
			if err := env.Client.Create(context.Background(), obj); err != nil {
				t.Fatalf("manifest was refused: %v\n%s", err, tc.manifest)
			}
		})
	}
}

// TestGateIsRefusedWithTheWayOut: a tenant's spec.gate is refused with a
// message that names the cluster-scoped way and the security page, in a
// QuantJob and in a QuantCronJob's template alike.
func TestGateIsRefusedWithTheWayOut(t *testing.T) {
	ns := newNamespace(t)
	for name, manifest := range map[string]string{
		"job":     validJob + "  workload: {shapes: [{rows: 1, cols: 1}]}\n  gate: {label: true}\n",
		"cronjob": validCronJob + "      gate: {taint: NoExecute}\n  schedule: \"@daily\"\n",
	} {
		t.Run(name, func(t *testing.T) {
			err := env.Client.Create(context.Background(), decode(t, manifest, ns))
			for _, want := range []string{"QuantGatePolicy", "docs/security.md"} {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("refusal %v does not name %s", err, want)
				}
			}
		})
	}
}

func TestGatePolicyDefaults(t *testing.T) {
	ctx := context.Background()
	obj := decode(t, strings.Replace(validGatePolicy, "{name: p}", "{name: defaults}", 1)+gatePolicyValidation+"  actions: {taint: {}}\n", "")
	if err := env.Client.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	got := &kquantv1alpha1.QuantGatePolicy{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
		t.Fatal(err)
	}
	s := got.Spec
	if s.Actions.Label || s.Actions.Taint == nil || s.Actions.Taint.Effect != "NoSchedule" || s.Period != nil ||
		s.Actions.Condition == nil || !*s.Actions.Condition ||
		s.Validation.Level != kquantv1alpha1.LevelStandard || s.Validation.Placement.Policy != kquantv1alpha1.PlacementEachGPU ||
		s.Validation.Placement.MaxParallel == nil || *s.Validation.Placement.MaxParallel != 8 {
		t.Errorf("gate policy defaults not applied: %+v", s)
	}

	// Without actions, a policy sets the Node condition alone.
	bare := decode(t, strings.Replace(validGatePolicy, "{name: p}", "{name: bare}", 1)+gatePolicyValidation, "")
	if err := env.Client.Create(ctx, bare); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(bare), got); err != nil {
		t.Fatal(err)
	}
	if a := got.Spec.Actions; a.Condition == nil || !*a.Condition || a.Label || a.Taint != nil {
		t.Errorf("actions of a policy without them = %+v, want the condition alone", a)
	}
	if got.Spec.IdleValidation != nil {
		t.Errorf("idleValidation of a policy without it = %+v, want none", got.Spec.IdleValidation)
	}

	// An idle validation without an interval revalidates a node at most hourly.
	idle := decode(t, strings.Replace(validGatePolicy, "{name: p}", "{name: idle}", 1)+gatePolicyValidation+"  idleValidation: {idleFor: 30m}\n", "")
	if err := env.Client.Create(ctx, idle); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(idle), got); err != nil {
		t.Fatal(err)
	}
	if v := got.Spec.IdleValidation; v == nil || v.Interval == nil || v.Interval.Duration != time.Hour || v.IdleFor.Duration != 30*time.Minute {
		t.Errorf("idleValidation defaults = %+v, want idleFor 30m and interval 1h", v)
	}
}

func TestRunSpecIsImmutableOnceBound(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	run := &kquantv1alpha1.QuantRun{}
	run.Name, run.Namespace = "run", ns
	run.Spec = kquantv1alpha1.QuantRunSpec{
		JobRef:    kquantv1alpha1.JobReference{Name: "j"},
		Recipe:    kquantv1alpha1.RecipeSnapshot{Name: "mxfp8", Spec: kquantv1alpha1.QuantRecipeSpec{Scheme: kquantv1alpha1.SchemeMXFP8BlockScaling}},
		Mode:      kquantv1alpha1.JobModeValidation,
		Workload:  kquantv1alpha1.Workload{Shapes: []kquantv1alpha1.Shape{{Rows: 32, Cols: 32}}},
		Execution: kquantv1alpha1.Execution{},
	}
	if err := env.Client.Create(ctx, run); err != nil {
		t.Fatalf("creating run: %v", err)
	}
	// Binding an unbound run is allowed.
	run.Spec.NodeName, run.Spec.GPUUUID = "node-a", "GPU-0"
	if err := env.Client.Update(ctx, run); err != nil {
		t.Fatalf("binding run: %v", err)
	}
	// Moving a bound run is not.
	run.Spec.NodeName = "node-b"
	err := env.Client.Update(ctx, run)
	if err == nil || !strings.Contains(err.Error(), "spec is immutable once spec.nodeName is set") {
		t.Fatalf("rebinding a bound run: got %v, want the immutability refusal", err)
	}
}

func TestDefaultsAreTransformerEngines(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	obj := decode(t, validRecipe+"  scheme: DelayedScaling\n  delayedScaling: {}\n", ns)
	if err := env.Client.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	got := &kquantv1alpha1.QuantRecipe{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), got); err != nil {
		t.Fatal(err)
	}
	d := got.Spec.DelayedScaling
	if d == nil || d.Margin == nil || *d.Margin != 0 || d.AmaxHistoryLen == nil || *d.AmaxHistoryLen != 1024 || d.AmaxComputeAlgo != kquantv1alpha1.AmaxComputeMax {
		t.Errorf("delayed scaling defaults = %+v, want margin 0, amaxHistoryLen 1024, amaxComputeAlgo max", d)
	}

	nvfp4 := decode(t, strings.Replace(validRecipe, "name: r", "name: nvfp4", 1)+"  scheme: NVFP4BlockScaling\n  nvfp4: {}\n", ns)
	if err := env.Client.Create(ctx, nvfp4); err != nil {
		t.Fatal(err)
	}
	gotNVFP4 := &kquantv1alpha1.QuantRecipe{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(nvfp4), gotNVFP4); err != nil {
		t.Fatal(err)
	}
	if n := gotNVFP4.Spec.NVFP4; n == nil || n.FourOverSix != kquantv1alpha1.NVFP4ScopeNone || n.FourOverSixErrorMode != kquantv1alpha1.FourOverSixMAE ||
		n.FourOverSixE4M3Bound256 != kquantv1alpha1.NVFP4ScopeAll || n.RowScaledActivation == nil || *n.RowScaledActivation {
		t.Errorf("nvfp4 defaults = %+v, want fourOverSix none, MAE, bound 256 for all, no row scaling", n)
	}

	job := decode(t, validJob+"  workload: {shapes: [{rows: 1, cols: 1}]}\n", ns)
	if err := env.Client.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	gotJob := &kquantv1alpha1.QuantJob{}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(job), gotJob); err != nil {
		t.Fatal(err)
	}
	s := gotJob.Spec
	if s.Mode != kquantv1alpha1.JobModeValidation || s.Level != kquantv1alpha1.LevelStandard ||
		s.Workload.Operation != kquantv1alpha1.OperationQuantize || s.Workload.InputDType != kquantv1alpha1.DTypeBF16 ||
		s.Workload.TensorRole != kquantv1alpha1.TensorRoleInput || s.Workload.Usage != kquantv1alpha1.UsageBoth || s.Workload.Distribution != kquantv1alpha1.DistributionNormal ||
		s.Execution.Graphs != kquantv1alpha1.GraphModeBoth || s.Placement.Policy != kquantv1alpha1.PlacementAnyGPU ||
		s.Placement.MaxParallel == nil || *s.Placement.MaxParallel != 8 || s.BackoffLimit == nil || *s.BackoffLimit != 3 ||
		s.DisruptionLimit == nil || *s.DisruptionLimit != 10 {
		t.Errorf("job defaults not applied: %+v", s)
	}
}

// TestEveryFieldIsDocumented walks every CRD schema: kubectl explain shows a
// description for every field only if the Go doc comment was written.
func TestEveryFieldIsDocumented(t *testing.T) {
	for _, file := range manifestFiles(t, "config/crd/bases") {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(data, crd); err != nil {
			t.Fatal(err)
		}
		for _, v := range crd.Spec.Versions {
			var walk func(path string, p apiextensionsv1.JSONSchemaProps)
			walk = func(path string, p apiextensionsv1.JSONSchemaProps) {
				for name, child := range p.Properties {
					childPath := path + "." + name
					if child.Description == "" && name != "metadata" {
						t.Errorf("%s: %s has no description", crd.Name, childPath)
					}
					walk(childPath, child)
				}
				if p.Items != nil && p.Items.Schema != nil {
					walk(path+"[]", *p.Items.Schema)
				}
			}
			walk(crd.Spec.Names.Kind, *v.Schema.OpenAPIV3Schema)
		}
	}
}

// TestKubectl checks what a user sees: kubectl explain with descriptions, and
// kubectl get by plural, short name and category with the printer columns.
func TestKubectl(t *testing.T) {
	ns := newNamespace(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.Kubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	kubectl := func(args ...string) (string, error) {
		out, err := exec.Command(env.KubectlPath(), append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := kubectl("apply", "-n", ns, "-f", filepath.Join(testenv.RepoRoot(), "recipes")); err != nil {
		t.Fatalf("kubectl apply -f recipes/: %v\n%s", err, out)
	}

	// The OpenAPI document that explain reads is published shortly after the CRD.
	var explain string
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, err := kubectl("explain", "quantrecipe.spec")
		if err == nil {
			explain = out
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubectl explain quantrecipe.spec: %v\n%s", err, out)
		}
		time.Sleep(time.Second)
	}
	for _, field := range []string{"scheme", "format", "delayedScaling", "currentScaling", "blockScaling", "mxfp8", "nvfp4"} {
		if !strings.Contains(explain, field) {
			t.Errorf("kubectl explain quantrecipe.spec does not show %s:\n%s", field, explain)
		}
	}
	if !strings.Contains(explain, "scheme is the recipe family") {
		t.Errorf("kubectl explain quantrecipe.spec lacks field descriptions:\n%s", explain)
	}

	for _, resource := range []string{"quantrecipes", "qr", "kquant"} {
		out, err := kubectl("get", "-n", ns, resource)
		if err != nil {
			t.Fatalf("kubectl get %s: %v\n%s", resource, err, out)
		}
		for _, want := range []string{"SCHEME", "FORMAT", "NATIVE", "EMULATED", "AGE", "mxfp8", "fp8-delayed-scaling"} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl get %s does not show %s:\n%s", resource, want, out)
			}
		}
	}
	out, err := kubectl("get", "-n", ns, "qr", "-o", "wide")
	if err != nil || !strings.Contains(out, "KEY") {
		t.Errorf("kubectl get qr -o wide does not show KEY: %v\n%s", err, out)
	}
	for _, resource := range []string{"qj", "qrun", "gpn", "qgp"} {
		if out, err := kubectl("get", "-n", ns, resource, "-o", "wide"); err != nil {
			t.Errorf("kubectl get %s -o wide: %v\n%s", resource, err, out)
		}
	}
	if out, err := kubectl("apply", "-n", ns, "-f", filepath.Join(testenv.RepoRoot(), "config", "samples", "validation-quantize.yaml")); err != nil {
		t.Fatalf("kubectl apply the validation sample: %v\n%s", err, out)
	}
	if out, err := kubectl("get", "-n", ns, "qj", "-o", "wide"); err != nil || !strings.Contains(out, "USAGE") || !strings.Contains(out, "Both") {
		t.Errorf("kubectl get qj -o wide does not show USAGE Both (the default): %v\n%s", err, out)
	}
}
