// Package host runs plugin instances described by a cordis.yml, and reloads
// them live when the file changes.
//
// A plugin kind is a Go type registered at start-up ([Register]); an entry of
// cordis.yml names a kind and gives it a configuration; the host turns each
// enabled entry into an instance that lives inside its own fiber (package
// fiber). Instances consume services ([Kind.Inject]) that other instances or
// the host itself provide.
//
// # The life of an instance
//
// Anyone writing a plugin needs only this list.
//
//  1. Parse. [ParseFile] reads the entries: id, name, config, disabled. !!js
//     values are parsed (syntax only) and kept unevaluated.
//
//  2. Check. Before anything changes, every entry of the file is checked: its
//     kind must be registered, its !!js values are evaluated against the
//     current environment, its config is decoded strictly into a fresh value
//     from [Kind.New] (an unknown key is an error), and [Validator.Validate]
//     runs. One problem anywhere and the whole file is refused: the running
//     instances stay as they are, and the error lists each problem with
//     file:line:column.
//
//  3. Reconcile. [Reconcile] diffs the file against the running entries by
//     id. Unchanged entries are not touched. Entries that are removed,
//     disabled or changed are disposed — all of them, before anything starts.
//     Then new, re-enabled and changed entries start, in file order.
//
//  4. Inject. An entry whose injected services are not all provided waits in
//     state pending (naming what it misses). It is applied as soon as they
//     are. If nothing that is on its way provides them, it counts as settled.
//
//  5. Apply. The host creates the instance's fiber, decodes the config again
//     (with the environment of this moment), and calls [Plugin.Apply] with a
//     [Context]. Apply must return quickly; slow work runs on goroutines
//     started with [Context.Go], reported with [Context.Begin].
//
//  6. Settle. The entry is starting until Apply has returned and every
//     Begin has finished; then it is ready. An error from Apply, from a Begin,
//     or a panic, disposes what the instance had set up and marks it failed.
//
//  7. Run. A ready instance that can no longer work calls [Context.Fail]: the
//     host disposes it and marks it failed, with the reason. One that lost
//     what it serves from and is getting it back calls
//     [Context.Reconnecting] (state reconnecting: what it registered stays,
//     and the entry counts as settled), then Reconnecting(nil) when it is
//     back (ready).
//
//  8. Dispose. The instances that inject a service this instance provides are
//     disposed first (they go back to pending); then the instance's fiber:
//     its children, its disposers in reverse order, its goroutines. Disposal
//     is bounded by [Options.DisposeTimeout]; what hung is named in the log.
//     Instances stopped together (an edit's removals, Close) are disposed
//     concurrently, dependents before their providers.
//
//  9. Failed is sticky: a failed entry stays failed until its configuration
//     changes or someone restarts it ([Host.Restart]).
//
//  10. Make before break. For a kind with [Kind.MakeBeforeBreak], an edit of
//     an entry whose instance serves (ready or reconnecting) starts the new
//     instance, the successor, beside the one that serves, the predecessor,
//     instead of stopping it first. The successor is applied (it sees the
//     predecessor through [Context.Predecessor]); the entry keeps its state,
//     marked reloading and not settled. Then, case by case:
//
//     When the successor is ready, the host calls its [Successor.TakeOver] on
//     its own goroutine: the successor moves the predecessor's registrations
//     to itself in one step, serves from then on, and keeps no pointer to
//     the predecessor (a chain of replaced instances would grow with every
//     edit). The predecessor retires: it takes no new work, finishes what was
//     routed to it ([Drainer], bounded by each call's own timeout), and is
//     disposed, off the host's goroutine.
//
//     When the successor fails and the predecessor serves, the successor is
//     disposed and the entry carries the note "reload failed: …; the previous
//     instance is still serving" until its configuration changes or someone
//     restarts it.
//
//     When the successor fails and the predecessor was reconnecting, both
//     stop (the predecessor serves nothing and retries an old
//     configuration), and the entry fails with the successor's error.
//
//     When the predecessor fails while the successor starts, the successor
//     carries on alone (the entry is starting) and takes over from nobody.
//
//     When another edit comes while the successor starts, that successor is
//     disposed (it never served) and another starts; removing the entry, or
//     closing the host, disposes both.
//
//     The host stops first instead when the instance does not serve, when
//     another entry of the same file claims a value it holds ([Uniquer]: a
//     serverName moving to another id), and for a kind that provides
//     services (it cannot opt in). [Host.Restart] of a serving entry replaces
//     it the same way.
//
//  11. Live settings. An edit that changes only keys a kind lists in
//     [Kind.Live] is applied to the running instance ([Reconfigurer]) on the
//     host's goroutine: nothing is re-created. An entry with nothing running,
//     or a plugin that refuses, is re-created instead.
//
//  12. Close. [Host.Close] disposes every instance (as in 8), then closes
//     the values of the per-host store ([Context.PerHost]) that implement io.Closer,
//     newest first — a plugin's per-host resource (mcp-client's process
//     spawner) outlives its instances and ends with the host.
//
//  13. Children. An instance may own entries: [Context.SetChildren] lists
//     them (an mcp-servers entry's servers), with ids "<its id>/<name>",
//     and the host reconciles that list with the children its entry has by
//     the rules of an edited file (3 to 11): unchanged children are not
//     touched, changed ones are replaced or re-created, removed ones
//     disposed, and a child that does not check out fails alone; a list
//     that cannot be made changes nothing ([Context.RejectChildren] says
//     why, as the entry's note). Children are entries like the others —
//     in snapshots right after their parent (EntryStatus.Parent), settled
//     by the same rules, restarted by their id — and the parent is not
//     settled until its last list is in place. They go with their parent
//     when it is removed, disabled, fails, restarts or closes, and stay
//     when an edit re-creates it: its new instance lists them again.
//
// All changes run one at a time on the host's own goroutine, so transitions
// never interleave; plugins report from any goroutine without blocking. The
// host's own output — its log, entry errors, events — is redacted with its
// secret set ([Host.Secrets]; package secret).
// Reads ([Host.Snapshot], [Host.Wait], [Host.Subscribe]) never wait for them.
//
// Two hosts in one process share nothing but the table of plugin kinds.
// Plugins keep per-host state with [Context.PerHost], never in package
// variables; the host closes what of it is an io.Closer (step 12). What a
// program tells its plugins is provided, once, before a load
// ([Key.ProvideBy]) and read with [Key.Provided].
package host
