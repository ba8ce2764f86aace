// Copyright 2026 The kquant Authors.
// SPDX-License-Identifier: Apache-2.0

package builders

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// LeaseWrapper builds a coordination.k8s.io Lease.
type LeaseWrapper struct{ coordinationv1.Lease }

// MakeLease starts a Lease called name in namespace ns, held by name, acquired
// and renewed now with a 40 s duration (the agent's defaults).
func MakeLease(name, ns string) *LeaseWrapper {
	now := metav1.NewMicroTime(time.Now())
	return &LeaseWrapper{coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(name),
			LeaseDurationSeconds: ptr.To[int32](40),
			AcquireTime:          &now,
			RenewTime:            &now,
		},
	}}
}

// Holder sets the holder identity.
func (w *LeaseWrapper) Holder(id string) *LeaseWrapper {
	w.Spec.HolderIdentity = ptr.To(id)
	return w
}

// Duration sets leaseDurationSeconds.
func (w *LeaseWrapper) Duration(d time.Duration) *LeaseWrapper {
	w.Spec.LeaseDurationSeconds = ptr.To(int32(d / time.Second))
	return w
}

// RenewedAt sets the renew time.
func (w *LeaseWrapper) RenewedAt(t time.Time) *LeaseWrapper {
	mt := metav1.NewMicroTime(t)
	w.Spec.RenewTime = &mt
	return w
}

// Obj returns the Lease.
func (w *LeaseWrapper) Obj() *coordinationv1.Lease { return &w.Lease }
