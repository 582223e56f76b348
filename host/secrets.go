package host

import (
	"reflect"

	"github.com/harness-go/harness/host/jsexpr"
	"github.com/harness-go/harness/host/secret"
)

// Configuration fields that may carry credentials are tagged `secret`
// (docs/rfc/0003-mcp-client.md, "Secrets"):
//
//   - `secret:"true"`: every string below the field (a string, the values of
//     a map, the items of a list) is a credential ([secret.Set.AddCredential]):
//     never printed, and kept from stdio servers by value;
//   - `secret:"env"` and `secret:"headers"`, on a map of names to values: a
//     value whose name looks like a credential ([secret.Sensitive],
//     [secret.CredentialHeader]) or that looks like one itself
//     ([secret.LooksLikeCredential]: a token, "Bearer <token>", a URL with a
//     password) is never printed; the others are ordinary words (`NODE_ENV:
//     production`) and print;
//   - `secret:"url"` (a URL: its password, with the Basic header it makes,
//     and its query values named like credentials) and `secret:"args"` (a
//     command line: what [secret.ArgCredentials] finds: values of flags
//     named like credentials, NAME=value with a NAME of the scrub table, the
//     credentials of a URL or a Bearer or Basic token anywhere in an
//     argument): the field prints, the credentials inside it do not.

// secrets are the values of a configuration to hide: credentials (tagged
// `secret:"true"`) and the others found in tagged fields.
type secrets struct{ credentials, others []string }

// addTo adds them to set.
func (s secrets) addTo(set *secret.Set) {
	set.AddCredential(s.credentials...)
	set.Add(s.others...)
}

// secretValues returns the strings to hide below the fields of v tagged
// secret.
func secretValues(v any) secrets {
	var out secrets
	collect(reflect.ValueOf(v), false, &out, 0)
	return out
}

func collect(v reflect.Value, secretField bool, out *secrets, depth int) {
	if depth > 32 || !v.IsValid() {
		return
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			collect(v.Elem(), secretField, out, depth+1)
		}
	case reflect.String:
		if secretField {
			out.credentials = append(out.credentials, v.String())
		}
	case reflect.Struct:
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() && !f.Anonymous {
				continue
			}
			fv := v.Field(i)
			switch tag := f.Tag.Get("secret"); {
			case tag == "url" && fv.Kind() == reflect.String:
				out.others = append(out.others, secret.URLCredentials(fv.String())...)
			case tag == "args" && fv.Kind() == reflect.Slice && fv.Type().Elem().Kind() == reflect.String:
				out.others = append(out.others, secret.ArgCredentials(fv.Interface().([]string))...)
			case (tag == "env" || tag == "headers") && fv.Kind() == reflect.Map && fv.Type().Key().Kind() == reflect.String:
				named := secret.Sensitive
				if tag == "headers" {
					named = secret.CredentialHeader
				}
				iter := fv.MapRange()
				for iter.Next() {
					val := iter.Value()
					if val.Kind() != reflect.String {
						continue
					}
					if named(iter.Key().String()) || secret.LooksLikeCredential(val.String()) {
						out.others = append(out.others, val.String())
					}
				}
			default:
				collect(fv, secretField || tag == "true", out, depth+1)
			}
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			collect(iter.Value(), secretField, out, depth+1)
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			collect(v.Index(i), secretField, out, depth+1)
		}
	}
}

// recording returns env with a Lookup that also adds every value it finds to
// set: whatever a !!js expression read from the environment is a secret,
// whichever field it lands in (process.cwd() is not).
func recording(env jsexpr.Env, set *secret.Set) jsexpr.Env {
	if set == nil || env.Lookup == nil {
		return env
	}
	lookup := env.Lookup
	env.Lookup = func(name string) (string, bool) {
		v, ok := lookup(name)
		if ok {
			set.AddCredential(v)
		}
		return v, ok
	}
	return env
}
