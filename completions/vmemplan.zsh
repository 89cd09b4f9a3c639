#compdef vmemplan

_vmemplan_completion() {
  eval $(env _TYPER_COMPLETE_ARGS="${words[1,$CURRENT]}" _VMEMPLAN_COMPLETE=complete_zsh vmemplan)
}

compdef _vmemplan_completion vmemplan
