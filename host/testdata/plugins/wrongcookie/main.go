// Command wrongcookie is a go-plugin binary of some other application.
package main

import goplugin "github.com/hashicorp/go-plugin"

func main() {
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: goplugin.HandshakeConfig{ProtocolVersion: 1, MagicCookieKey: "OTHER_APP_PLUGIN", MagicCookieValue: "x"},
		GRPCServer:      goplugin.DefaultGRPCServer,
	})
}
