// Package browser tests the harness's web page (plugins/web) in a real
// browser: headless Chromium from Debian's chromium package, driven from Go
// with chromedp, against `harness web` built from this tree. One browser
// serves every test; each test has a browser context of its own (its own
// cookies) and a harness of its own.
//
// The browser is /usr/bin/chromium, or $HARNESS_CHROMIUM. When it is
// missing the tests run scripts/chromium.sh, which installs Debian's
// package; where that cannot work they are skipped — and fail in CI
// (CI=true). HARNESS_WEB_SCREENSHOTS=1 writes the screenshots the README
// shows to docs/web/.
package browser
