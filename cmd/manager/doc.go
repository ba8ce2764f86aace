// Command manager runs kquant's controllers: recipe status, job expansion and
// capability-aware binding of runs to GPUs, retries, lost nodes, deadlines,
// TTLs, summaries, and Node labels. It runs as a Deployment with leader
// election; see package controllers for what each controller does.
//
//	kquant-manager --leader-elect --lease-namespace=kquant-system
//	kquant-manager --version
//	kquant-manager --apply-crds=/crds
//	kquant-manager --uninstall --lease-namespace=kquant-system --uninstall-pod-selector=app.kubernetes.io/instance=kquant
package main
