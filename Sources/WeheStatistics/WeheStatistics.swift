/// Pure numerics used by the Wehe analysis; knows no Wehe types.
public enum WeheStatistics {}
