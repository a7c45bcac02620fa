module example.local/pause

go 1.22
