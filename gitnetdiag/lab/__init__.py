"""The reproduction lab: client -- router -- server network namespaces with real servers."""
