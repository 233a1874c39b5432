// Command hangstart never completes the plugin handshake.
package main

import "time"

func main() { time.Sleep(time.Hour) }
