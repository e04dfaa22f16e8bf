package cvx

import (
	"encoding/json"
	"errors"

	"github.com/convexnn/convexnn/solvers"
)

func openRBCD(a ADMM, prog *solvers.Program, o solvers.ADMMOptions, saved json.RawMessage, unmarshal func(any) error) (engine, error) {
	return nil, errors.New("cvx: ADMM{Inner: \"rbcd\"} is not available yet")
}
