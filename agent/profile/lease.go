package profile

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1ac "k8s.io/client-go/applyconfigurations/coordination/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/go-logr/logr"

	"github.com/kquant/kquant/api/v1alpha1"
)

// Lease timing, as the kubelet's node leases: renewed every 10 s, expired
// after 40 s, so three renewals may fail before the node counts as lost.
const (
	DefaultLeaseRenewInterval = 10 * time.Second
	DefaultLeaseDuration      = 40 * time.Second
)

// LeaseName is the name of node's Lease.
func LeaseName(nodeName string) string { return "kquant-agent-" + nodeName }

// LeaseKeeper renews one node's Lease.
type LeaseKeeper struct {
	client        client.Client
	namespace     string
	nodeName      string
	holder        string
	clock         clock.WithTicker
	renewInterval time.Duration
	duration      time.Duration
}

// NewLeaseKeeper returns a keeper of node's Lease in namespace, held by
// holder (the agent ID). Zero intervals take the defaults.
func NewLeaseKeeper(c client.Client, clk clock.WithTicker, namespace, nodeName, holder string, renewInterval, duration time.Duration) *LeaseKeeper {
	if renewInterval <= 0 {
		renewInterval = DefaultLeaseRenewInterval
	}
	if duration <= 0 {
		duration = DefaultLeaseDuration
	}
	return &LeaseKeeper{
		client: c, clock: clk, namespace: namespace, nodeName: nodeName, holder: holder,
		renewInterval: renewInterval, duration: duration,
	}
}

// Renew applies the Lease with a fresh renewTime.
func (l *LeaseKeeper) Renew(ctx context.Context) error {
	now := metav1.NewMicroTime(l.clock.Now())
	lease := coordinationv1ac.Lease(LeaseName(l.nodeName), l.namespace).
		WithLabels(map[string]string{v1alpha1.LabelNode: l.nodeName}).
		WithSpec(coordinationv1ac.LeaseSpec().
			WithHolderIdentity(l.holder).
			WithLeaseDurationSeconds(int32(l.duration / time.Second)).
			WithRenewTime(now))
	if err := l.client.Apply(ctx, lease, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("renewing Lease %s/%s: %w", l.namespace, LeaseName(l.nodeName), err)
	}
	return nil
}

// Run renews the Lease until ctx ends. A failed renewal is logged and
// retried at the next tick; the Lease's duration leaves room for several.
func (l *LeaseKeeper) Run(ctx context.Context) error {
	log := logr.FromContextOrDiscard(ctx).WithValues("lease", LeaseName(l.nodeName))
	ticker := l.clock.NewTicker(l.renewInterval)
	defer ticker.Stop()
	for {
		if err := l.Renew(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			log.Error(err, "Lease renewal failed")
		} else {
			log.V(1).Info("Lease renewed")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
	}
}
