//go:build !linux

package sandboxtest

// Attack says that this system has no sandbox to attack.
func Attack(name string, _ uint16, _ string) string { return name + ": refused: no sandbox here" }

// AttackEnv and AttackPortEnv: see the Linux build.
const (
	AttackEnv     = "AGENT_WORKER_SANDBOX_ATTACK"
	AttackPortEnv = "AGENT_WORKER_SANDBOX_ATTACK_PORT"
)

// MaybeAttack does nothing here.
func MaybeAttack() {}
