// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

// Package tenant is the tenant suite: a user bound only to the built-in edit
// role in one namespace tries, against a real API server with kquant's CRDs,
// RBAC and admission policies installed from config/ as they ship, every way
// this project knows to reach beyond that namespace: gating nodes, forging a
// run's results, stalling the manager with a schedule or a duration, writing
// cluster-scoped kinds, acting as the manager, the agent or a run pod. Each
// attempt must be refused with a message that says why, and afterwards
// nothing may have changed on any Node, in another tenant's namespace, in the
// release namespace or in kube-node-lease (resourceVersions before and after,
// which every write changes).
//
// The tenant is a user with a client certificate (testenv.UserConfig), not an
// impersonated identity, so that RBAC sees it as it sees a person; the tokens
// its attacks use come from TokenRequest, as a tenant's would. Tokens that the
// kubelet mounts into a real pod are the real cluster's (test/cluster).
//
// envtest runs no kube-controller-manager, so ClusterRole aggregation does not
// happen by itself: once kquant's roles are installed, the suite fills every
// ClusterRole that has an aggregationRule (view, edit, admin) from the roles
// its selectors match, as the clusterrole-aggregation controller does. The
// tenant is then bound to edit alone, and holds exactly what a namespace
// editor holds on a real cluster: Kubernetes' own aggregate-to-edit and
// aggregate-to-view rules plus kquant-edit and kquant-view.
package tenant
