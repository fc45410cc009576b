package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"strings"
	"time"

	"github.com/sandboxrun/sandboxrun/client"
)

// Run a skill's script on the server named by SANDBOXRUN_URL (token from
// SANDBOXRUN_TOKEN), then branch on a refusal.
func Example() {
	ctx := context.Background()
	c, err := client.New("") // $SANDBOXRUN_URL: http://127.0.0.1:8080 or unix:/run/sandboxrun.sock
	if err != nil {
		log.Fatal(err)
	}
	res, err := c.Run(ctx, "hello", client.RunRequest{
		Script: "scripts/echo.py",
		Params: client.Params{Args: map[string]string{"greeting": "hi"}, Timeout: 10},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.ExitCode, string(res.Output))

	_, err = c.Exec(ctx, "hello", client.ExecRequest{Command: "rm -rf /tmp/x"})
	var e *client.Error
	switch {
	case errors.Is(err, client.ErrRefused) && errors.As(err, &e):
		fmt.Println("denied:", e.Part, "- allow it with", e.Suggest)
	case errors.Is(err, client.ErrBusy) && errors.As(err, &e):
		fmt.Println("retry in", e.RetryAfter)
	case err != nil:
		log.Fatal(err)
	}
}

// Stream a command's output as it comes; the Result is the last event.
func ExampleClient_ExecStream() {
	c, err := client.New("")
	if err != nil {
		log.Fatal(err)
	}
	for ev, err := range c.ExecStream(context.Background(), "hello", client.ExecRequest{Command: "echo one && echo two"}) {
		if err != nil {
			log.Fatal(err)
		}
		switch ev.Type {
		case "stdout", "stderr":
			fmt.Printf("%s: %s", ev.Type, ev.Data)
		case "result":
			fmt.Println("exit", ev.Result.ExitCode)
		}
	}
}

// A session: upload a file, run in it, fetch what the run made; the
// session is deleted when the function returns.
func ExampleClient_WithSession() {
	ctx := context.Background()
	c, err := client.New("")
	if err != nil {
		log.Fatal(err)
	}
	err = c.WithSession(ctx, 30*time.Minute, func(s *client.Session) error {
		if _, err := c.PutFile(ctx, s.ID, "in.txt", strings.NewReader("hello from the host")); err != nil {
			return err
		}
		res, err := c.Python(ctx, "hello", client.PythonRequest{
			Code:   "open('out.txt', 'w').write(open('in.txt').read().upper())",
			Params: client.Params{Session: s.ID},
		})
		if err != nil {
			return err
		}
		fmt.Println(res.Files[0].Path, res.Files[0].Change)
		rc, err := c.GetFile(ctx, s.ID, "out.txt")
		if err != nil {
			return err
		}
		defer rc.Close()
		b, err := io.ReadAll(rc)
		fmt.Println(string(b))
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
}
