package main

import (
	"context"
	"flag"

	"github.com/peterbourgon/ff/v3/ffcli"
)

// completionCmd prints a shell's completion script. The scripts are thin:
// on every Tab they call the hidden `agent-worker __complete` with the words
// typed so far, which walks the command tree and asks a running daemon.
func completionCmd(e *env) *ffcli.Command {
	fs := flag.NewFlagSet("completion", flag.ContinueOnError)
	cmd := leaf("completion", "completion bash|zsh|fish", "print a shell completion script (see --help for how to install it)", fs, [2]int{1, 1},
		func(_ context.Context, args []string) error {
			script, ok := completionScripts[args[0]]
			if !ok {
				return usagef("completion: unknown shell %q: use bash, zsh or fish", args[0])
			}
			e.printf("%s", script)
			return nil
		})
	cmd.LongHelp = `Prints a script that completes agent-worker's commands, subcommands and
flags and, when a daemon is running, agent names, @workflow:tag targets,
run ids and question ids (it asks the running daemon; it never starts one).

bash: load it in every new shell,

    echo 'source <(agent-worker completion bash)' >> ~/.bashrc

or, with the bash-completion package, install it once:

    mkdir -p ~/.local/share/bash-completion/completions
    agent-worker completion bash > ~/.local/share/bash-completion/completions/agent-worker

zsh: load it in every new shell, after compinit in ~/.zshrc,

    echo 'source <(agent-worker completion zsh)' >> ~/.zshrc

or install it once as _agent-worker in a directory of $fpath:

    agent-worker completion zsh > "${fpath[1]}/_agent-worker"

fish: install it once,

    mkdir -p ~/.config/fish/completions
    agent-worker completion fish > ~/.config/fish/completions/agent-worker.fish

Open a new shell afterwards.`
	return cmd
}

// completionScripts are the scripts by shell. Each hands the words before
// the cursor and the one being typed to `__complete`, which prints one
// candidate a line (value, a tab, a description) and, last, the line
// ":files" when file names fit too.
var completionScripts = map[string]string{
	"bash": `# bash completion for agent-worker (agent-worker completion bash)
_agent_worker() {
    local words cur line prog c i files=0
    if [[ -n ${COMP_LINE-} ]]; then
        # The line itself, not COMP_WORDS, which bash splits at the colon
        # of alice@review:pr-1.
        line=${COMP_LINE:0:${COMP_POINT:-${#COMP_LINE}}}
        read -ra words <<<"$line"
        if [[ ${#words[@]} -eq 0 || $line == *[[:space:]] ]]; then
            words+=("")
        fi
    else
        words=("${COMP_WORDS[@]:0:COMP_CWORD+1}")
    fi
    cur=${words[${#words[@]}-1]}
    prog=${words[0]}
    [[ $prog == "~/"* ]] && prog=$HOME/${prog#"~/"}
    local IFS=$'\n'
    local out=($("$prog" __complete "${words[@]:1}" 2>/dev/null))
    COMPREPLY=()
    for c in "${out[@]}"; do
        if [[ $c == :files ]]; then
            files=1
        else
            COMPREPLY+=("${c%%$'\t'*}")
        fi
    done
    if [[ $files == 1 ]]; then
        if [[ ${#COMPREPLY[@]} -eq 0 ]]; then
            compopt -o default 2>/dev/null
        else
            COMPREPLY+=($(compgen -f -- "$cur"))
        fi
    fi
    # bash replaces only the part after the last colon.
    if [[ $cur == *:* && $COMP_WORDBREAKS == *:* ]]; then
        local prefix=${cur%"${cur##*:}"}
        for i in "${!COMPREPLY[@]}"; do
            COMPREPLY[i]=${COMPREPLY[i]#"$prefix"}
        done
    fi
    return 0
}
complete -F _agent_worker agent-worker
`,
	"zsh": `#compdef agent-worker
# zsh completion for agent-worker (agent-worker completion zsh)
_agent-worker() {
    local -a out cands
    local line v d files=0
    out=("${(@f)$(${words[1]} __complete "${(@)words[2,CURRENT]}" 2>/dev/null)}")
    for line in "${out[@]}"; do
        [[ -z $line ]] && continue
        if [[ $line == :files ]]; then
            files=1
            continue
        fi
        v=${line%%$'\t'*}
        d=""
        [[ $line == *$'\t'* ]] && d=${line#*$'\t'}
        v=${v//:/\\:}
        if [[ -n $d ]]; then
            cands+=("$v:$d")
        else
            cands+=("$v")
        fi
    done
    (( ${#cands} )) && _describe -t values agent-worker cands
    (( files )) && _files
    return 0
}
if [[ ${funcstack[1]} == _agent-worker ]]; then
    _agent-worker "$@"
else
    compdef _agent-worker agent-worker
fi
`,
	"fish": `# fish completion for agent-worker (agent-worker completion fish)
function __agent_worker_complete
    set -l args (commandline -opc)
    set -l prog $args[1]
    set -e args[1]
    set -l cur (commandline -ct)
    set -l files 0
    for line in ($prog __complete $args "$cur" 2>/dev/null)
        if test "$line" = ":files"
            set files 1
        else
            printf '%s\n' $line
        end
    end
    if test $files = 1
        __fish_complete_path "$cur"
    end
end
complete -c agent-worker -f -a '(__agent_worker_complete)'
`,
}
