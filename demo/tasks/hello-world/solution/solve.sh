#!/bin/sh
printf 'Hello, world!\n' > hello.txt
