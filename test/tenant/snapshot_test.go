// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package tenant

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	kquantv1alpha1 "github.com/kquant/kquant/api/v1alpha1"
)

// snapshot maps each object the tenant must leave alone
// (group/resource/namespace/name) to its resourceVersion, which every write
// to the object changes.
type snapshot map[string]string

// guardedNamespaces are the namespaces whose every object the tenant must
// leave alone.
var guardedNamespaces = []string{otherNS, releaseNS, nodeLeaseNS}

// guardedClusterResources are the cluster-scoped resources the tenant must
// leave alone, besides every cluster-scoped kind of kquant's own group.
// Others (the API server's flow-control status, CRD status) change by
// themselves and no tenant write reaches them.
var guardedClusterResources = []schema.GroupResource{
	{Resource: "nodes"},
	{Resource: "namespaces"},
	{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"},
	{Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"},
	{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies"},
	{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicybindings"},
	{Group: "scheduling.k8s.io", Resource: "priorityclasses"},
}

// takeSnapshot lists, as the cluster admin, every listable resource the API
// server serves (found by discovery, so kinds added later are guarded too) in
// the guarded namespaces, and the guarded cluster-scoped resources.
func takeSnapshot(ctx context.Context, admin *rest.Config) (snapshot, error) {
	cfg := rest.CopyConfig(admin)
	// Listing every kind lists deprecated ones too; their warnings say nothing
	// about the tenant.
	cfg.WarningHandler = rest.NoWarnings{}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("dynamic client: %w", err)
	}
	lists, err := disco.ServerPreferredResources()
	if err != nil {
		return nil, fmt.Errorf("discovering resources: %w", err)
	}
	snap := snapshot{}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			return nil, fmt.Errorf("parsing group version %q: %w", list.GroupVersion, err)
		}
		for _, res := range list.APIResources {
			if strings.Contains(res.Name, "/") || !slices.Contains(res.Verbs, "list") {
				continue
			}
			gr := schema.GroupResource{Group: gv.Group, Resource: res.Name}
			namespaces := guardedNamespaces
			if !res.Namespaced {
				if gv.Group != kquantv1alpha1.GroupVersion.Group && !slices.Contains(guardedClusterResources, gr) {
					continue
				}
				namespaces = []string{metav1.NamespaceNone}
			}
			for _, ns := range namespaces {
				objs, err := dyn.Resource(gv.WithResource(res.Name)).Namespace(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					return nil, fmt.Errorf("listing %s in %q: %w", gr, ns, err)
				}
				for _, o := range objs.Items {
					snap[gr.String()+"/"+o.GetNamespace()+"/"+o.GetName()] = o.GetResourceVersion()
				}
			}
		}
	}
	return snap, nil
}

// changes lists, one per line, what differs from before to after.
func (before snapshot) changes(after snapshot) []string {
	var out []string
	for k, rv := range before {
		switch now, ok := after[k]; {
		case !ok:
			out = append(out, "deleted "+k)
		case now != rv:
			out = append(out, "changed "+k)
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			out = append(out, "created "+k)
		}
	}
	slices.Sort(out)
	return out
}
