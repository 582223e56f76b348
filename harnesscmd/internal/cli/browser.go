package cli

import (
	"errors"
	"os/exec"
	"runtime"
)

// openBrowser returns how the console opens a URL a server asked the
// person to visit (URL-mode elicitation), once the person said yes: the
// program in $BROWSER when set, else the system's opener (xdg-open, open,
// rundll32). Without a display (Linux: DISPLAY and WAYLAND_DISPLAY unset)
// or in an SSH session it opens nothing and says so: the person opens the
// address shown.
func openBrowser(lookup func(string) (string, bool)) func(string) error {
	get := func(k string) string {
		v, _ := lookup(k)
		return v
	}
	return func(u string) error {
		var cmd *exec.Cmd
		switch {
		case get("BROWSER") != "":
			cmd = exec.Command(get("BROWSER"), u)
		case get("SSH_CONNECTION") != "":
			return errors.New("an SSH session")
		case runtime.GOOS == "darwin":
			cmd = exec.Command("open", u)
		case runtime.GOOS == "windows":
			cmd = exec.Command("rundll32", "url.dll,FileProtocolHandler", u)
		case get("DISPLAY") == "" && get("WAYLAND_DISPLAY") == "":
			return errors.New("no display")
		default:
			cmd = exec.Command("xdg-open", u)
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		go cmd.Wait() // reaped; the browser outlives it
		return nil
	}
}
