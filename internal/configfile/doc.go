// Package configfile reads a command's --config file for ff: a YAML map
// from the command's flag names (without their dashes) to values, checked
// the way a workflow file is. Every unknown key, every bad value and every
// key given twice comes back at once, each as FILE:LINE with what to write
// instead, an unknown key with the flag it most likely meant. A syntax
// error is placed by internal/yamlerr.
//
// cmd/agent-worker installs it on the daemon command with
// ff.WithConfigFileParser(configfile.Parser(fs, "config")); it replaces
// ffyaml.Parser, which stops at the first unknown key and names neither
// the file nor the line.
package configfile
