package load

import (
	"strings"
	"testing"
)

func TestReadSSE(t *testing.T) {
	big := `{"jsonrpc":"2.0","id":7,"result":{"text":"` + strings.Repeat("x", 1<<20) + `"}}`
	stream := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n" +
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":6,\"result\":{}}\n\n" +
		"event: message\ndata: " + big + "\n\n"
	got, err := readSSE(strings.NewReader(stream), 7)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != big {
		t.Errorf("got %d bytes, want the 1 MiB answer with id 7", len(got))
	}
	if _, err := readSSE(strings.NewReader(stream), 8); err == nil || !strings.Contains(err.Error(), "without the response") {
		t.Errorf("id 8 is not in the stream: err = %v", err)
	}
}
