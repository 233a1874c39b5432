package workflow

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ParseParams reads the arguments given after `--` (--name v, --name=v,
// -s v; a boolean is a flag that reads "true") against f.Params, so a
// workflow's inputs are checked before anything runs. The result holds every
// declared param: the given value, else its default, else "".
func (f *File) ParseParams(args []string) (map[string]string, error) {
	out := map[string]string{}
	var errs []error
	for i := 0; i < len(args); i++ {
		arg := args[i]
		flag, val, hasVal := strings.Cut(arg, "=")
		var p *Param
		switch {
		case strings.HasPrefix(flag, "--") && len(flag) > 2:
			p = f.param(func(p Param) bool { return p.Name == flag[2:] })
		case strings.HasPrefix(flag, "-") && len(flag) == 2:
			p = f.param(func(p Param) bool { return p.Short == flag[1:] })
		default:
			errs = append(errs, fmt.Errorf("unexpected argument %q: give params as --name value; %s", arg, f.paramHelp()))
			continue
		}
		switch {
		case p == nil:
			errs = append(errs, fmt.Errorf("unknown parameter %s: %s", flag, f.paramHelp()))
			continue
		case p.Type == "boolean" && !hasVal:
			val = "true"
		case p.Type == "boolean":
			b, err := strconv.ParseBool(val)
			if err != nil {
				errs = append(errs, fmt.Errorf("--%s: %q must be true or false", p.Name, val))
				continue
			}
			val = strconv.FormatBool(b)
		case !hasVal && i+1 == len(args):
			errs = append(errs, fmt.Errorf("--%s needs a value: --%s VALUE", p.Name, p.Name))
			continue
		case !hasVal:
			i++
			val = args[i]
		}
		if p.Type == "number" && !isNumber(val) {
			errs = append(errs, fmt.Errorf("--%s: %q must be a number", p.Name, val))
			continue
		}
		out[p.Name] = val
	}
	var missing, usage []string
	for _, p := range f.Params {
		if _, ok := out[p.Name]; ok {
			continue
		}
		if p.Required {
			missing = append(missing, p.Name)
			usage = append(usage, "--"+p.Name+" VALUE")
		}
		out[p.Name] = p.Default
	}
	if missing != nil {
		errs = append(errs, fmt.Errorf("missing required parameter(s): %s (use %s)", strings.Join(missing, ", "), strings.Join(usage, " ")))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

func (f *File) param(match func(Param) bool) *Param {
	for i := range f.Params {
		if match(f.Params[i]) {
			return &f.Params[i]
		}
	}
	return nil
}

// paramHelp lists the params so an error shows what the workflow takes.
func (f *File) paramHelp() string {
	if len(f.Params) == 0 {
		return "this workflow takes no parameters"
	}
	var flags []string
	for _, p := range f.Params {
		s := "--" + p.Name
		if p.Short != "" {
			s += "/-" + p.Short
		}
		if p.Type != "boolean" {
			s += " " + strings.ToUpper(p.Type)
		}
		flags = append(flags, s)
	}
	return "this workflow takes " + strings.Join(flags, ", ")
}
