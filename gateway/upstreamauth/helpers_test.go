package upstreamauth

import (
	"fmt"
	"time"
)

func fmtAny(v any) string { return fmt.Sprint(v) }

func timeNow() time.Time { return time.Now() }
