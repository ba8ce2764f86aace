// Package uninstall takes kquant's marks off a cluster when its Helm release
// is deleted: the post-delete hook of the chart runs `kquant-manager
// --uninstall`, which calls Run. It waits until the release's manager and
// agent pods are gone (so that neither puts a label or a profile back), then
// deletes every GPUNodeProfile and removes from every Node the labels and
// taints in kquant's domain (kquant.dev/). The CRDs, and with them the
// recipes, jobs and runs, stay: Helm never deletes CRDs, and deleting them is
// the user's decision.
package uninstall
