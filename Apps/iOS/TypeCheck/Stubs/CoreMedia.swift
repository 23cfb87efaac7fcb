// Stand-in for the parts of CoreMedia our iOS files use.

/// developer.apple.com/documentation/coremedia/cmformatdescription (a CF type).
public final class CMFormatDescription: @unchecked Sendable {}
public typealias CMVideoFormatDescription = CMFormatDescription

/// developer.apple.com/documentation/coremedia/cmvideodimensions — `width`, `height: Int32`.
public struct CMVideoDimensions: Sendable {
    public var width: Int32
    public var height: Int32
    public init(width: Int32, height: Int32) { self.width = width; self.height = height }
}

/// developer.apple.com/documentation/coremedia/cmvideoformatdescriptiongetdimensions(_:) —
/// `func CMVideoFormatDescriptionGetDimensions(_ videoDesc: CMVideoFormatDescription) -> CMVideoDimensions`.
public func CMVideoFormatDescriptionGetDimensions(_ videoDesc: CMVideoFormatDescription) -> CMVideoDimensions {
    fatalError("stand-in")
}
