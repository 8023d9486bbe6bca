from rewardsmith.cli import console

console()
