package conflict

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestRequeue(t *testing.T) {
	conflict := fmt.Errorf("binding run r: %w", apierrors.NewConflict(schema.GroupResource{Resource: "quantruns"}, "r", errors.New("modified")))
	other := errors.New("boom")
	cases := map[string]struct {
		err         error
		wantErr     bool
		wantRequeue bool
	}{
		"no error":             {},
		"only conflicts":       {err: errors.Join(nil, conflict, conflict), wantRequeue: true},
		"a real error remains": {err: errors.Join(conflict, other), wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			res, err := Requeue(tc.err)
			if (err != nil) != tc.wantErr || (res.RequeueAfter > 0) != tc.wantRequeue {
				t.Errorf("Requeue() = %+v, %v; want error %v, requeue %v", res, err, tc.wantErr, tc.wantRequeue)
			}
		})
	}
}
